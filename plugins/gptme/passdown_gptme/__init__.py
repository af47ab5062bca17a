"""passdown's gptme plugin: a handoff when a gptme session ends.

Install it by naming this plugin's parent folder (`plugins/gptme` of passdown's
repository, or `$(passdown doctor --plugins-dir)/plugins/gptme`) in `paths` of the
`[plugins]` table of gptme's config.toml; its hook module is `hooks/passdown.py`.
"""

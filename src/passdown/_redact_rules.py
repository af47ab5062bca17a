"""The redaction rules: one compiled pattern (with its cheap finder and its replacement)
per kind of secret. How a name and a value are judged secret is `_redact_values` (its
`value_is_secret` and `MARKER_PREFIX` are part of this module's interface too).
`_redact.Redactor` runs the rules; see its docstring for why these rules and not a
library's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from passdown._redact_values import (
    CODE_VALUES,
    MARKER_PREFIX,
    _re,
    is_trivial,
    looks_random,
    name_strength,
    value_is_secret,
)

Replacer = Callable[[re.Match[str]], "str | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret. `pattern` runs on the text; when it has no literal prefix (so the
    regex engine cannot skip ahead fast) a `finder` runs on the lowercased text instead and
    `pattern` is only tried where the finder hit."""

    kind: str
    pattern: re.Pattern[str]
    # Lowercase substrings, one of which must be present for the rule to run: only worth it
    # for rules whose regex is slow; a literal-prefixed regex scans as fast as `in` does.
    triggers: tuple[str, ...]
    replace: Replacer  # the replacement for a match, or None to keep it
    finder: re.Pattern[str] | _ProgramsBeforeOptions | None = None


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NAME_CHARS = _WORD_CHARS | {".", "-"}


# What may sit directly before a token although it ends in a letter or digit: an ANSI
# colour code (raw or JSON-escaped), an escaped newline, tab or quote inside JSON text, a
# percent-encoded byte. Coloured test output and JSON-escaped tool output are everyday
# content, so a token right after one of these is as much a token as after a space.
_ESCAPE_BEFORE = (
    r"(?:(?:\x1b|\\(?:u001[bB]|x1[bB]|e|033))\[[0-?]*[ -/]*[@-~]|\\[nrt\"']|%[0-9A-Fa-f]{2})$"
)


def _at_word_start(m: re.Match[str]) -> bool:
    # Checked here rather than with a lookbehind: a regex that starts with a literal lets
    # the engine skip ahead at GB/s, a leading lookbehind makes it try every position.
    start = m.start()
    if start == 0 or m.string[start - 1] not in _WORD_CHARS:
        return True
    return _re(_ESCAPE_BEFORE).search(m.string, max(0, start - 24), start) is not None


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


def _whole(kind: str, check: Callable[[str], bool] | None = None) -> Replacer:
    def replace(m: re.Match[str]) -> str | None:
        ok = _at_word_start(m) and (check is None or check(m.group(0)))
        return marker(kind) if ok else None

    return replace


def _swap(m: re.Match[str], group: int, value: str, kind: str) -> str:
    """The match with `value` (a prefix of `group`) replaced by the marker, the name kept."""
    whole = m.group(0)
    start = m.start(group) - m.start()
    return f"{whole[:start]}{marker(kind)}{whole[start + len(value) :]}"


def _keep_name(
    kind: str, check: Callable[[str], bool] = lambda v: True, group: int = 1
) -> Replacer:
    """Keep everything around `group` (the name, the scheme), redact the group (the value)."""

    def replace(m: re.Match[str]) -> str | None:
        value = m.group(group)
        if not value or value.startswith(MARKER_PREFIX) or not check(value):
            return None
        return _swap(m, group, value, kind)

    return replace


def _mixed(value: str) -> bool:
    """Provider tokens are random: a digit and both cases, so words never match."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


_TOKEN_SPECS: tuple[tuple[str, str, Callable[[str], bool] | None], ...] = (
    # kind, pattern (starting with a literal, so the engine skips ahead fast), extra check
    # Access key ids (AKIA long-term, ASIA temporary, ABIA/ACCA other partitions); other
    # IAM prefixes (AIDA, AROA...) name users and roles and are not credentials.
    ("aws_access_key", r"A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", None),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{30,255}(?![A-Za-z0-9])", None),
    ("github_token", r"github_pat_[A-Za-z0-9_]{22,255}", None),
    ("gitlab_token", r"gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}", None),
    ("slack_token", r"x(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}", None),
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_-]{20,}", None),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}", _mixed),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", None),
    ("stripe_key", r"sk_(?:live|test)_[0-9A-Za-z]{10,}", None),
    ("stripe_key", r"rk_(?:live|test)_[0-9A-Za-z]{10,}", None),
    ("stripe_key", r"whsec_[A-Za-z0-9]{24,}", None),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", None),
    ("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", None),
    (
        "huggingface_token",
        r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])",
        lambda v: any(c.isupper() for c in v) and any(c.islower() for c in v[3:]),
    ),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", None),
    ("twilio_key", r"AC[0-9a-f]{32}(?![A-Za-z0-9])", None),
    ("twilio_key", r"SK[0-9a-f]{32}(?![A-Za-z0-9])", None),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,}", None),
)

_PEM = (
    r"(?s)-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----"
    r"(?:.{0,20000}?-----END \1PRIVATE KEY\2-----"  # the whole block when it is complete
    # else (a truncated block) the header and base64 lines that follow
    r"|(?:(?:\\r|\\n|\r|\n)[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+: [^\r\n\\]*))*)"
)
_SLACK_WEBHOOK = r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{20,})"
# The password runs to the last `@` before the host: `user:p@ss:w0rd@host` is one password.
_URL_PASSWORD = r"://[^\s:/@?#\"'<>]*:([^\s/?#\"'<>]+)@(?=[\w\[.-])"
_AZURE = r"(?i)\b(?:AccountKey|SharedAccessKey|SharedSecret)[ \t]*=[ \t]*([A-Za-z0-9+/]{20,}={0,2})"
_AZURE_SAS = r"sig=([A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})"
_AUTH_HEADER = (
    r"(?i)\b(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?:(bearer|basic|token|digest|negotiate|ntlm|apikey)[ \t]+)?([^\s\"'\\,;]+)"
)
_BEARER = r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/=-]{16,})"
_CURL_USER = r"(?:-u|--user)[ =]\\?[\"']?[^\s:\"']+:([^\s\"'\\]+)"
_CLI_FLAG = (
    r"(?i)--?([a-z0-9-]*(?:passw|passphrase|secret|token|api-?key|access-key|private-key|"
    r"credential)[a-z0-9-]*)(?:=|[ \t]+)\\?[\"']?([^\s\"'\\]+)"
)
_CLI_FINDER = r"-[a-z0-9-]*(?:pass|secret|token|key|credential)"
# Programs that take a password as a short option, each with its own option and form:
# `mysql -pSECRET` (glued only: `mysql -p db` prompts and names a database), `sshpass -p
# SECRET`, `mongosh -p SECRET`, `docker login -p SECRET`, `redis-cli -a SECRET`,
# `ldapsearch -w SECRET`, `unzip -P SECRET`. Anything else (`ssh -p 22`, `mkdir -p`) is not.
_ARGS = r"[^\n;&|]{0,300}?[ \t]"
_PROGRAM_PASSWORD = (
    r"(?:(?i:mysql(?:dump|admin|import|show|check|slap|pump|sh)?|mariadb(?:-?dump|-?admin)?"
    rf"|7z[ar]?|(?:un)?rar)\b{_ARGS}-p(?=[^\s-])"
    rf"|(?i:sshpass)\b{_ARGS}-p[ \t]*"
    rf"|(?i:mongo(?:sh|dump|restore|export|import|stat|top|files)?)\b{_ARGS}-p[ \t]+"
    rf"|(?i:docker|podman|nerdctl|buildah|skopeo|helm|oras)\b{_ARGS}(?i:login)\b{_ARGS}-p[ \t]+"
    rf"|(?i:redis-cli)\b{_ARGS}-a[ \t]+"
    rf"|(?i:ldap[a-z]+)\b{_ARGS}-w[ \t]+"
    rf"|(?i:unzip|zip|sqlcmd|bcp)\b{_ARGS}-P[ \t]+"
    r")(?:'([^'\n]*)'|\"([^\"\n]*)\"|([^\s\"'\\;|&`]+))"
)
_PROGRAM_NAME = (
    r"(?:mysql|mariadb|sshpass|mongo|docker|podman|nerdctl|buildah|skopeo|helm|oras|redis-cli"
    r"|ldap|unzip|zip|sqlcmd|bcp|7z|rar|unrar)"
)
# on lowercased text, so -P too; "-" is far rarer than the space before it, so the scan
# (and the trigger check) start from it
_PASSWORD_OPTION = r"-[paw]"
_PROGRAM_TRIGGERS = ("-p", "-a", "-w")


class _Hit:
    __slots__ = ("_start",)

    def __init__(self, start: int) -> None:
        self._start = start

    def start(self) -> int:
        return self._start


class _ProgramsBeforeOptions:
    """The finder for `_PROGRAM_PASSWORD`. Program names are common words inside other
    words ("rar" in "library", "zip" in "zipfile"), the password options are rarer: find
    the options, then look back on their line for a program name. Yields the program
    names' starts in increasing order, as a regex finder would."""

    def finditer(self, lowered: str) -> Iterator[_Hit]:
        last = -1
        for option in _re(_PASSWORD_OPTION).finditer(lowered):
            at = option.start()
            if not at or lowered[at - 1] not in " \t":
                continue
            start = max(lowered.rfind("\n", 0, at) + 1, at - 300)
            for name in _re(_PROGRAM_NAME).finditer(lowered, start, at):
                if name.start() > last:
                    last = name.start()
                    yield _Hit(last)


# `name <sep> value`: anchored on the secret-ish word; the start of the name is found by
# looking back from the match, so the regex need not try every identifier.
_ASSIGN_WORD = r"(?:secret|token|pass|pwd|key|credential|auth|sess|sig|salt|hmac)"
_ASSIGN = (
    rf"(?i){_ASSIGN_WORD}[a-z0-9_.-]*?(\\?[\"']?)([ \t]*(?::=|=>|=|:)[ \t]*)"
    r"(?:(\\?\")((?:[^\"\\\n]|\\[^\"\n])*)\\?\"|(\\?')([^'\n\\]*)\\?'|([^\s\"'`]+))"
)
_ASSIGN_FINDER = rf"{_ASSIGN_WORD}[a-z0-9_.-]*\\?[\"']?[ \t]*[:=]"
_ASSIGN_TRIGGERS = (
    "secret",
    "token",
    "pass",
    "pwd",
    "key",
    "credential",
    "auth",
    "sess",
    "sig",
    "salt",
    "hmac",
)
# A random-looking string right after a secret word in prose ("the api key is 3kF9...").
_NEAR_WORD = r"(?:secret|token|passw(?:or)?d|api[ _-]?key|access[ _-]?key|credentials?)"
_NEAR = (
    rf"(?i){_NEAR_WORD}[a-z_-]*(?:[ \t]+(?:is|was|key|value|of|to|set to))?"
    r"[ \t:=]+[\"'`]?([A-Za-z0-9+/_=.~-]{20,})"
)
_NEAR_TRIGGERS = ("secret", "token", "passw", "key", "credential")


def _trim_unquoted(value: str, env_style: bool) -> str:
    """An unquoted value ends at code punctuation (or, in a query string, at `&`)."""
    if not env_style:
        value = re.split(r"[,;(){}\[\]<>&|]", value, maxsplit=1)[0]
    return value.rstrip(".,;:)]}")


def _assign_replace(m: re.Match[str]) -> str | None:
    start = m.start()
    while start > 0 and m.string[start - 1] in _NAME_CHARS:
        start -= 1
    name = m.string[start : m.start(1)].lstrip(".-")
    if not name_strength(name):
        return None  # most hits: tokens=, author:, keyword=
    group = next(g for g in (4, 6, 7) if m.group(g) is not None)
    quoted = group != 7
    sep = m.group(2)
    env_style = not quoted and name.isupper() and "=" in sep and " " not in sep
    value = m.group(group) if quoted else _trim_unquoted(m.group(group), env_style)
    colon = sep.strip() == ":"
    if not value or not value_is_secret(
        name, value, quoted=quoted, env_style=env_style, colon=colon
    ):
        return None
    return _swap(m, group, value, "secret_assignment")


def _cli_replace(m: re.Match[str]) -> str | None:
    if m.start() and not m.string[m.start() - 1].isspace():
        return None  # not a flag: a word with a dash inside
    value = _trim_unquoted(m.group(2), env_style=True)
    if not value or value[0] in "-/~." or is_trivial(value) or name_strength(m.group(1)) < 2:
        return None
    return _swap(m, 2, value, "secret_assignment")


def _program_password_replace(m: re.Match[str]) -> str | None:
    if m.start() and m.string[m.start() - 1] in _NAME_CHARS:
        return None  # part of a longer word (`mymysql`, `libzip`)
    group = next(g for g in (1, 2, 3) if m.group(g) is not None)
    value = m.group(group) if group < 3 else _trim_unquoted(m.group(group), env_style=True)
    # after these options any literal is the password, even a word (`sshpass -p 'secret'`)
    quoted_word = group < 3 and value.lower() in CODE_VALUES
    if not value or (is_trivial(value) and not quoted_word):
        return None
    return _swap(m, group, value, "secret_assignment")


def _near_replace(m: re.Match[str]) -> str | None:
    value = m.group(1).rstrip(".,")
    if not looks_random(value, allow_hex=False):
        return None
    return _swap(m, 1, value, "high_entropy_secret")


def _header_replace(m: re.Match[str]) -> str | None:
    # With a scheme (Bearer x) any literal is a credential; without one, `Authorization:
    # auth` or `authorization = self.headers.get(...)` is code unless the value is random.
    value = m.group(2)
    ok = not is_trivial(value) if m.group(1) else looks_random(value, min_len=12)
    return _swap(m, 2, value, "auth_header") if ok and not value.startswith(MARKER_PREFIX) else None


def _curl_user_replace(m: re.Match[str]) -> str | None:
    if m.start() and not m.string[m.start() - 1].isspace():
        return None
    return _keep_name("basic_auth", _not_trivial)(m)


def _sas_replace(m: re.Match[str]) -> str | None:
    if not m.start() or m.string[m.start() - 1] not in "?&":
        return None  # a SAS signature is a query parameter
    return _keep_name("azure_key")(m)


def _not_trivial(value: str) -> bool:
    return not is_trivial(value)


def _bearer_ok(value: str) -> bool:
    return (
        not is_trivial(value)
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


@functools.cache
def rules() -> tuple[Rule, ...]:
    """Built on first use, so that importing this module stays cheap. Order matters: specific
    kinds first, so that a GitHub token in GITHUB_TOKEN=... is reported as github_token."""
    # A key block may follow anything, even a JSON-escaped "\n": no word-start check.
    rules = [Rule("private_key", _re(_PEM), (), lambda m: marker("private_key"))]
    rules += [Rule(kind, _re(rx), (), _whole(kind, check)) for kind, rx, check in _TOKEN_SPECS]
    rules += [
        Rule("slack_webhook", _re(_SLACK_WEBHOOK), (), _keep_name("slack_webhook")),
        Rule("url_password", _re(_URL_PASSWORD), (), _keep_name("url_password", _not_trivial)),
        Rule(
            "azure_key",
            _re(_AZURE),
            ("accountkey", "sharedaccesskey", "sharedsecret"),
            _keep_name("azure_key"),
        ),
        Rule("azure_key", _re(_AZURE_SAS), (), _sas_replace),
        Rule("auth_header", _re(_AUTH_HEADER), ("authorization",), _header_replace),
        Rule("auth_header", _re(_BEARER), ("bearer",), _keep_name("auth_header", _bearer_ok)),
        Rule("basic_auth", _re(_CURL_USER), (), _curl_user_replace),
        Rule("secret_assignment", _re(_CLI_FLAG), (), _cli_replace, _re(_CLI_FINDER)),
        Rule(
            "secret_assignment",
            _re(_PROGRAM_PASSWORD),
            _PROGRAM_TRIGGERS,
            _program_password_replace,
            _ProgramsBeforeOptions(),
        ),
        Rule(
            "secret_assignment",
            _re(_ASSIGN),
            _ASSIGN_TRIGGERS,
            _assign_replace,
            _re(_ASSIGN_FINDER),
        ),
        Rule("high_entropy_secret", _re(_NEAR), _NEAR_TRIGGERS, _near_replace, _re(_NEAR_WORD)),
    ]
    return tuple(rules)


__all__ = ["MARKER_PREFIX", "Replacer", "Rule", "marker", "rules", "value_is_secret"]

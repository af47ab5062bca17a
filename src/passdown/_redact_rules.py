"""The redaction rules: how a name and a value are judged secret, and one compiled
pattern (with its cheap finder and its replacement) per kind of secret. `_redact.Redactor`
runs them; see its docstring for why these rules and not a library's.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Patterns are kept as sources and compiled on first use: importing this module stays cheap.
_re = functools.cache(re.compile)

MARKER_PREFIX = "[REDACTED:"
_MARKER = r"\[REDACTED:[a-z0-9_]*\]"

# Name analysis works on words: AWS_SECRET_ACCESS_KEY, apiKey and api-key all split into words.
_NAME_WORD = r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+"
# A word containing one of these makes any non-trivial value a secret ...
_STRONG_STEMS = (
    "secret",
    "token",
    "passw",
    "passphrase",
    "pwd",
    "credential",
    "apikey",
    "accesskey",
    "privatekey",
    "sessionid",
    "sessid",
)
_NOT_STRONG = frozenset(("tokenize", "tokenizer", "tokenized", "tokenizing", "tokenization"))
# ... and so does one of these word pairs ("api key", "private key", "client key", ...).
_STRONG_FIRST_OF_KEY = frozenset(
    (
        "api",
        "access",
        "private",
        "signing",
        "encryption",
        "master",
        "auth",
        "session",
        "client",
        "account",
        "shared",
        "license",
        "app",
        "service",
        "storage",
        "deploy",
        "ssh",
        "gpg",
    )
)
# A name of these words only holds a secret if the value itself looks random.
_WEAK = frozenset(("key", "auth", "pass", "session", "sig", "signature", "salt", "hmac"))
# A secret-sounding name ending with one of these describes something else (max_tokens,
# token_type, password_file, secret_name, PWD_STATE).
_NOT_SECRET_LAST = frozenset(
    (
        "count",
        "counts",
        "type",
        "types",
        "len",
        "length",
        "limit",
        "limits",
        "size",
        "max",
        "min",
        "num",
        "file",
        "files",
        "path",
        "paths",
        "dir",
        "name",
        "names",
        "id",
        "ids",
        "env",
        "var",
        "url",
        "uri",
        "endpoint",
        "header",
        "prefix",
        "suffix",
        "field",
        "expiry",
        "expires",
        "expiration",
        "at",
        "in",
        "ttl",
        "timeout",
        "index",
        "idx",
        "kind",
        "mode",
        "policy",
        "format",
        "regex",
        "pattern",
        "usage",
        "budget",
        "ratio",
        "cost",
        "tokens",
        "strategy",
        "provider",
        "scope",
        "scopes",
        "encoding",
        "state",
        "enabled",
        "required",
        "location",
        "store",
        "manager",
        "class",
        "factory",
        "helper",
        "label",
        "length",
        "version",
        "dialog",
        "prompt",
        "input",
        "field",
        "column",
        "policy",
        "rotation",
    )
)
_CODE_VALUES = frozenset(
    (
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "str",
        "bytes",
        "int",
        "bool",
        "float",
        "any",
        "optional",
        "string",
        "object",
        "dict",
        "list",
        "required",
        "self",
        "cls",
        "redacted",
        "yes",
        "no",
        "on",
        "off",
        "enabled",
        "disabled",
        "break",
        "continue",
        "return",
        "pass",
        "password",
        "passwd",
        "secret",
        "token",
        "pwd",
        "pw",
        "example",
    )
)
_PLACEHOLDER = (
    r"(?i)^(?:<[^<>]*>|%\(?\w*\)?s|\*+|x+|\.\.\.|…|your[-_ ]?\w*|placeholder|dummy|xxx\w*)$"
)
_TEMPLATE_MARKS = ("${", "$(", "{{", "{%", "<%")
_UUID = r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"
_HEX = r"^[0-9a-fA-F]+$"
_WORDY = r"^[A-Za-z]+(?:[ _.:/-][A-Za-z]+)*$"
_IDENT = r"^[A-Za-z_]\w*$"
_DOTTED = r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$"
_PATH_PART = r"^[a-z_.-]{2,}$"


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(value: str, *, min_len: int = 20, allow_hex: bool = True) -> bool:
    """True for a value that looks generated (a key, a token) rather than a word, an
    identifier, a path, a hash in git output or a UUID."""
    if len(value) < min_len or any(c.isspace() for c in value) or value[0] in "/~.[$":
        return False
    if _re(_UUID).match(value) or _re(_WORDY).match(value) or _re(_DOTTED).match(value):
        return False
    if "://" in value or value.isdigit():
        return False
    if "/" in value and sum(bool(_re(_PATH_PART).match(p)) for p in value.split("/")) >= 2:
        return False  # src/passdown/cli.py:120 (base64 has "/" too, between random runs)
    if _re(_HEX).match(value):
        return allow_hex and len(value) >= 32
    upper = any(c.isupper() for c in value)
    lower = any(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    mixed = upper and lower and digits > 0  # base62 / base64 secrets
    lower_alnum = lower and not upper and digits >= len(value) // 5 and len(value) >= 24
    return (mixed or lower_alnum) and _entropy(value) >= 3.5


@functools.lru_cache(maxsize=4096)  # names repeat (tokens, key, ...): analyse each once
def _name_strength(name: str) -> int:
    """2 = the name says secret, 1 = it might hold one (key, auth), 0 = not a secret name."""
    words = [w.lower() for w in _re(_NAME_WORD).findall(name)]
    if not words or words[-1] in _NOT_SECRET_LAST:
        return 0
    if len(words) > 1 and words[-1] in ("pass", "pw") and name.isupper():
        return 2  # DB_PASS, SMTP_PASS, MYSQL_PW: environment variables holding a password
    for i, word in enumerate(words):
        if word not in _NOT_STRONG and any(stem in word for stem in _STRONG_STEMS):
            return 2
        if word == "key" and i and words[i - 1] in _STRONG_FIRST_OF_KEY:
            return 2
    return 1 if any(w in _WEAK for w in words) else 0


def _is_trivial(value: str) -> bool:
    """Values that carry no secret: short, code keywords, templates, placeholders, markers,
    UUIDs (ids in agent sessions), and quoted prose (" and ")."""
    v = value.strip()
    return (
        len(v) < 3
        or v != value
        or v.startswith(MARKER_PREFIX)
        or v.lower() in _CODE_VALUES
        or any(mark in v for mark in _TEMPLATE_MARKS)
        or (v[0] == "$" and _re(_IDENT).match(v[1:]) is not None)
        or bool(_re(_PLACEHOLDER).match(v))
        or (v.isdigit() and len(v) < 6)
        or _re(_UUID).match(v) is not None
    )


def value_is_secret(
    name: str, value: str, *, quoted: bool, env_style: bool, colon: bool = False
) -> bool:
    """Decide for a named value. Strong names redact any non-trivial literal; weak names and
    code-looking values (variables, calls, type annotations) need a random-looking value."""
    if MARKER_PREFIX in name:
        # a name we redacted ("[REDACTED:stripe_key].txt") is not secret-sounding for the
        # kind in its marker: redacting redacted data again must change nothing
        name = _re(_MARKER).sub("", name)
    strength = _name_strength(name)
    if strength == 0 or _is_trivial(value) or value[0] in "/~" or value.startswith("./"):
        return False  # paths (PWD=/home/me, password_file: ~/.pw) are not secrets
    if strength == 1:
        return _looks_random(value)
    if quoted or env_style:
        return True
    if _re(_DOTTED).match(value):
        return False  # token = self.token, password: typing.Optional
    if _re(_IDENT).match(value) and not any(c.isdigit() for c in value):
        # `password=passwd` is a variable, `token: Token` a type; but YAML's
        # `password: hunter` is a literal (a lowercase word after a colon).
        plain_word = colon and value[0].islower() and value.lower() not in name.lower()
        return plain_word or _looks_random(value)
    return "(" not in value


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
    if not _name_strength(name):
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
    if not value or value[0] in "-/~." or _is_trivial(value) or _name_strength(m.group(1)) < 2:
        return None
    return _swap(m, 2, value, "secret_assignment")


def _program_password_replace(m: re.Match[str]) -> str | None:
    if m.start() and m.string[m.start() - 1] in _NAME_CHARS:
        return None  # part of a longer word (`mymysql`, `libzip`)
    group = next(g for g in (1, 2, 3) if m.group(g) is not None)
    value = m.group(group) if group < 3 else _trim_unquoted(m.group(group), env_style=True)
    # after these options any literal is the password, even a word (`sshpass -p 'secret'`)
    quoted_word = group < 3 and value.lower() in _CODE_VALUES
    if not value or (_is_trivial(value) and not quoted_word):
        return None
    return _swap(m, group, value, "secret_assignment")


def _near_replace(m: re.Match[str]) -> str | None:
    value = m.group(1).rstrip(".,")
    if not _looks_random(value, allow_hex=False):
        return None
    return _swap(m, 1, value, "high_entropy_secret")


def _header_replace(m: re.Match[str]) -> str | None:
    # With a scheme (Bearer x) any literal is a credential; without one, `Authorization:
    # auth` or `authorization = self.headers.get(...)` is code unless the value is random.
    value = m.group(2)
    ok = not _is_trivial(value) if m.group(1) else _looks_random(value, min_len=12)
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
    return not _is_trivial(value)


def _bearer_ok(value: str) -> bool:
    return (
        not _is_trivial(value)
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

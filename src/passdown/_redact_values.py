"""How a name and a value are judged secret: the words of a name that say it holds a
secret (strongly, or maybe), the values that carry none (short, code, templates,
placeholders, markers, UUIDs), and what looks generated rather than written. The rules
(`passdown._redact_rules`) use these where a pattern alone cannot tell a secret from code.
"""

from __future__ import annotations

import functools
import math
import re

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
CODE_VALUES = frozenset(
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


def looks_random(value: str, *, min_len: int = 20, allow_hex: bool = True) -> bool:
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
def name_strength(name: str) -> int:
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


def is_trivial(value: str) -> bool:
    """Values that carry no secret: short, code keywords, templates, placeholders, markers,
    UUIDs (ids in agent sessions), and quoted prose (" and ")."""
    v = value.strip()
    return (
        len(v) < 3
        or v != value
        or v.startswith(MARKER_PREFIX)
        or v.lower() in CODE_VALUES
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
    strength = name_strength(name)
    if strength == 0 or is_trivial(value) or value[0] in "/~" or value.startswith("./"):
        return False  # paths (PWD=/home/me, password_file: ~/.pw) are not secrets
    if strength == 1:
        return looks_random(value)
    if quoted or env_style:
        return True
    if _re(_DOTTED).match(value):
        return False  # token = self.token, password: typing.Optional
    if _re(_IDENT).match(value) and not any(c.isdigit() for c in value):
        # `password=passwd` is a variable, `token: Token` a type; but YAML's
        # `password: hunter` is a literal (a lowercase word after a colon).
        plain_word = colon and value[0].islower() and value.lower() not in name.lower()
        return plain_word or looks_random(value)
    return "(" not in value

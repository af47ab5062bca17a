"""Redaction: every kind is caught with its name kept, ordinary text is left alone.

All secrets here are fakes with the right shape, built at run time so the source holds no
string a scanner would flag as a real credential."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import textwrap

import pytest

from passdown._redact import Redactor, redact

A36 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"  # 36 random-looking alphanumerics
B40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Tk2Lm4N"
HEX32 = "9f86d081884c7d659a2feaa0c55ad015"
MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")


def jwt() -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256'})}.{part({'sub': '42', 'admin': True})}.{A36}_xQ9"


def pem(label: str = "RSA PRIVATE KEY") -> tuple[str, list[str]]:
    body = [base64.b64encode(bytes(range(i, i + 48))).decode() for i in range(0, 240, 48)]
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----", body


# (kind, secret, text containing it)
SELF_EVIDENT = [
    ("aws_access_key", "AKIA" + "Q3XZ7VJ4PLKW2MNB", "key id {s} in use"),
    ("aws_access_key", "ASIA" + "Q3XZ7VJ4PLKW2MNB", "{s}"),
    ("github_token", "ghp_" + A36, "token {s}"),
    ("github_token", "gho_" + A36, "{s}"),
    ("github_token", "ghu_" + A36, "{s}"),
    ("github_token", "ghs_" + A36, "{s}"),
    ("github_token", "ghr_" + A36, "{s}"),
    ("github_token", "github_pat_11ABCDEFG0" + A36 + "_" + A36, "{s}"),
    ("gitlab_token", "glpat-" + A36[:20], "push with {s} now"),
    ("slack_token", "xoxb-123456789012-1234567890123-" + A36[:24], "{s}"),
    ("slack_token", "xoxp-123456789012-1234567890123-" + A36[:24], "{s}"),
    ("openai_key", "sk-" + A36 + "T3BlbkFJ" + A36[:12], "key {s}"),
    ("openai_key", "sk-proj-" + A36 + "-" + A36 + "_" + A36, "OPENAI_API_KEY={s}"),
    ("anthropic_key", "sk-ant-api03-" + A36 + A36 + "AA", "{s}"),
    ("google_api_key", "AIza" + A36[:35], "maps key {s}"),
    ("stripe_key", "sk_live_" + A36, "{s}"),
    ("stripe_key", "rk_live_" + A36, "{s}"),
    ("stripe_key", "sk_test_" + A36, "{s}"),
    ("jwt", jwt(), "cookie value {s}"),
    ("npm_token", "npm_" + A36, "//registry.npmjs.org/:_authToken={s}"),
    ("huggingface_token", "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH", "{s}"),
    ("sendgrid_key", "SG." + A36[:22] + "." + (A36 + A36)[:43], "{s}"),
    ("twilio_key", "AC" + HEX32, "account {s}"),
    ("twilio_key", "SK" + HEX32, "{s}"),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + A36 + A36, "{s}"),
]


@pytest.mark.parametrize(("kind", "secret", "template"), SELF_EVIDENT)
def test_self_evident_tokens_are_redacted_with_their_kind(
    kind: str, secret: str, template: str
) -> None:
    out = redact(template.format(s=secret))
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(
    ("text", "kept", "secret", "kind"),
    [
        (
            f"export AWS_SECRET_ACCESS_KEY={B40}",
            "export AWS_SECRET_ACCESS_KEY=",
            B40,
            "secret_assignment",
        ),
        (
            f"curl -H 'Authorization: Bearer {A36}' https://api.example.com",
            "curl -H 'Authorization: Bearer ",
            A36,
            "auth_header",
        ),
        (
            "Authorization: Basic ZGVwbG95Omh1bnRlcjI=",
            "Authorization: Basic ",
            "ZGVwbG95Omh1bnRlcjI=",
            "auth_header",
        ),
        (
            "git clone https://bob:s3cr3tP4ss@github.com/o/r.git",
            "https://bob:",
            "s3cr3tP4ss",
            "url_password",
        ),
        ("redis://:hunter2pw@cache:6379", "redis://:", "hunter2pw", "url_password"),
        ('{"password": "correct-horse"}', '{"password": "', "correct-horse", "secret_assignment"),
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=", "hunter2", "secret_assignment"),
        ("password: hunter", "password: ", "hunter", "secret_assignment"),
        ("mysql --password=Tr0ub4dor -h db", "mysql --password=", "Tr0ub4dor", "secret_assignment"),
        ("curl -u admin:pa55word https://ci", "curl -u admin:", "pa55word", "basic_auth"),
        (f"client_secret = '{A36}'", "client_secret = '", A36, "secret_assignment"),
        (f"the api key is {A36}", "the api key is ", A36, "high_entropy_secret"),
        (
            f"https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFGH/{A36[:24]}",
            "https://hooks.slack.com/services/",
            A36[:24],
            "slack_webhook",
        ),
        (
            f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={B40}==;EndpointSuffix=e",
            "AccountKey=",
            B40,
            "azure_key",
        ),
    ],
)
def test_named_secrets_keep_the_name(text: str, kept: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out
    assert f"{kept}[REDACTED:{kind}]" in out


@pytest.mark.parametrize(
    "label",
    [
        "RSA PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "EC PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_private_key_blocks_go_whole(label: str) -> None:
    block, body = pem(label)
    out = redact(f"here:\n{block}\nafter")
    assert out == "here:\n[REDACTED:private_key]\nafter"
    assert not any(line in out for line in body)


def test_private_key_inside_json_escaped_text_and_truncated() -> None:
    block, body = pem()
    escaped = json.dumps({"content": f"key\n{block}\nok"})
    assert not any(line in redact(escaped) for line in body)
    truncated = "\n".join(block.splitlines()[:4]) + "\n[truncated]"
    out = redact(truncated)
    assert not any(line in out for line in body)
    assert out.endswith("[truncated]")


@pytest.mark.parametrize(
    "text",
    [
        "password=None",
        "token: str",
        "def login(self, password: Optional[str] = None, token: str | None = None):",
        "f(password=password, token=self.token)",
        "sort_key=name",
        "key = os.environ['KEY']",
        "headers['Authorization'] = f'Bearer {token}'",
        "authorization = self.headers.get('authorization')",
        "max_tokens=4096, token_count=12, input_tokens: 812",
        "the token expired, so refresh the password and keep the secret safe",
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "HEAD is now at 3f2a9c1 fix parser",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "session 123e4567-e89b-12d3-a456-426614174000",
        '{"sessionId": "123e4567-e89b-12d3-a456-426614174000", "uuid": "0b1c3a55-1f2e-4e6d-9c1a-2b3c4d5e6f70"}',
        "pydantic==2.7.1 numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl",
        "see /home/dev/.ssh/config and ~/.aws/credentials",
        "https://github.com/org/repo/pull/12?tab=files#diff-1",
        "PWD=/home/dev/project",
        "DB_PASSWORD=${DB_PASSWORD}",
        'password = "<your password>"',
        "keyword = KeywordArgument(name)",
        "if ttype == tokenize.NEWLINE: break",
        '__author__ = "Guido van Rossum <guido@python.org>"',
        "Basic usage: pass the Bearer token in the Authorization header.",
        "cache key: src/passdown/cli/export.py:1716200000",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("text", [t.format(s=s) for _, s, t in SELF_EVIDENT])
def test_redacting_twice_equals_once(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@pytest.mark.parametrize("kind", sorted({k for k, _, _ in SELF_EVIDENT} | {"secret_assignment"}))
def test_redacting_data_twice_equals_once_when_a_key_was_redacted(kind: str) -> None:
    """A file or branch named after a secret becomes a key like `[REDACTED:stripe_key].txt`;
    a second pass (the store redacts what the coordinator already redacted) must not take
    the `key` in the marker for a secret-sounding name and redact the value under it."""
    digest = "3f2a9c8e7d6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f"
    data = {f"[REDACTED:{kind}].txt": digest, f"feat/[REDACTED:{kind}]": {"head": digest}}
    assert Redactor().redact_data(data) == data
    once = redact(json.dumps(data))
    assert redact(once) == once and digest in once


def test_markers_have_the_documented_format_and_survive_another_pass() -> None:
    text = REALISTIC
    out = redact(text)
    kinds = set(re.findall(r"\[REDACTED:([a-z_]+)\]", out))
    assert kinds >= {
        "aws_access_key",
        "secret_assignment",
        "auth_header",
        "private_key",
        "url_password",
        "github_token",
    }
    assert redact(out) == out


def test_findings_count_by_kind() -> None:
    r = Redactor()
    r.redact(f"a ghp_{A36} b ghp_{A36[::-1]} c AKIA" + "Q3XZ7VJ4PLKW2MNB")
    r.redact("DB_PASSWORD=hunter2")
    assert r.findings == {"github_token": 2, "aws_access_key": 1, "secret_assignment": 1}


def test_redact_data_walks_nested_structures_without_mutating() -> None:
    data = {
        "messages": [{"text": f"use ghp_{A36}", "n": 3}],
        "commands": ("ls", f"export TOKEN={A36}"),
        "password": "hunter2",  # the key names the secret; the value alone has no context
        "api_key": f"{A36}",
        "tags": {"x"},
        f"ghp_{A36}": "a token used as a key",
        "session_id": "123e4567-e89b-12d3-a456-426614174000",
        "max_tokens": 100,
        "none": None,
    }
    r = Redactor()
    out = r.redact_data(data)
    dumped = json.dumps(out, default=list)
    assert A36 not in dumped and "hunter2" not in dumped
    assert out["messages"][0] == {"text": "use [REDACTED:github_token]", "n": 3}
    assert out["commands"] == ("ls", "export TOKEN=[REDACTED:secret_assignment]")
    assert out["password"] == "[REDACTED:secret_assignment]"
    assert out["[REDACTED:github_token]"] == "a token used as a key"
    assert out["session_id"] == data["session_id"]
    assert out["max_tokens"] == 100 and out["none"] is None and out["tags"] == {"x"}
    assert data["password"] == "hunter2"  # input untouched
    assert r.findings["github_token"] == 2


def test_redact_data_keeps_both_keys_when_they_redact_alike() -> None:
    out = Redactor().redact_data({f"ghp_{A36}": 1, f"ghp_{A36[::-1]}": 2})
    assert sorted(out.values()) == [1, 2]


_BLOCK, _BODY = pem("OPENSSH PRIVATE KEY")
REALISTIC = textwrap.dedent(
    """\
    $ export AWS_ACCESS_KEY_ID=AKIAQ3XZ7VJ4PLKW2MNB
    $ export AWS_SECRET_ACCESS_KEY={b40}
    $ curl -sS -H 'Authorization: Bearer {a36}' -H 'Accept: application/json' https://api.example.com/v1
    {{"error": "expired"}}
    $ cat .env
    DATABASE_URL=postgres://app:Pg-Pass-2024@db.internal:5432/app
    GITHUB_TOKEN=ghp_{a36}
    STRIPE_SECRET_KEY=sk_live_{a36}
    SECRET_KEY='django-insecure-{a36}'
    $ cat config.json
    {{"slack": {{"token": "xoxb-123456789012-1234567890123-{a24}"}}, "password": "Summer2024!",
     "anthropic": "sk-ant-api03-{a36}{a36}AA"}}
    The assistant said: here is the key you asked for
    {block}
    Commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 on session 123e4567-e89b-12d3-a456-426614174000.
    """
).format(b40=B40, a36=A36, a24=A36[:24], block=_BLOCK)
PLANTED = [B40, A36, "Pg-Pass-2024", "Summer2024!", A36[:24], *_BODY]


def test_no_planted_secret_survives_a_realistic_transcript() -> None:
    out = redact(REALISTIC)
    for secret in PLANTED:
        assert secret not in out
    # ...while what the next agent needs stays readable
    assert "export AWS_SECRET_ACCESS_KEY=[REDACTED:secret_assignment]" in out
    assert "postgres://app:[REDACTED:url_password]@db.internal:5432/app" in out
    assert "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39" in out
    assert "123e4567-e89b-12d3-a456-426614174000" in out
    assert "https://api.example.com/v1" in out


def test_realistic_transcript_inside_json_lines() -> None:
    # What a session file looks like: the same text, JSON-escaped on one line.
    line = json.dumps({"type": "user", "message": {"content": REALISTIC}})
    out = redact(line)
    for secret in PLANTED:
        assert secret not in out
    json.loads(out)  # still valid JSON


def test_empty_and_plain_strings() -> None:
    assert redact("") == ""
    assert redact("hello world") == "hello world"


def test_import_is_cheap() -> None:
    # Patterns compile on first use: importing the module compiles none of them.
    code = "import passdown._redact, passdown._redact_rules as r; print(r.rules.cache_info().currsize, r._re.cache_info().currsize)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]


# -- password forms (issue 11, item 9) ----------------------------------------------------

PASSWORD_FORMS = [
    ("DB_PASS=hunter2", "hunter2"),
    ("export SMTP_PASS='s3cr3t-mail'", "s3cr3t-mail"),
    ("MYSQL_ROOT_PWD=Tr0ub4dor", "Tr0ub4dor"),
    ("REDIS_PWD: correcthorse", "correcthorse"),
    ("mysql -u root -pSECRETpw42 shop", "SECRETpw42"),
    ("mysqldump -h db -p'quoted pw' shop > dump.sql", "quoted pw"),
    ("mariadb --user=app -pAppPass1", "AppPass1"),
    ("sshpass -p 'SECRET' ssh deploy@host", "SECRET"),
    ("sshpass -pSECRETglued ssh host", "SECRETglued"),
    ("mongosh -u admin -p hunter2 --authenticationDatabase admin", "hunter2"),
    ("docker login -u bot -p hunter2 registry.example.com", "hunter2"),
    ("redis-cli -h cache -a hunter2 ping", "hunter2"),
    ("ldapsearch -x -D cn=admin -w hunter2 -b dc=example", "hunter2"),
    ("unzip -P hunter2 backup.zip", "hunter2"),
    ("https://user:p@ss:w0rd@db.example.com/app", "p@ss:w0rd"),
    ("postgres://app:pa@ss@localhost:5432/app", "pa@ss"),
]


@pytest.mark.parametrize(("text", "secret"), PASSWORD_FORMS)
def test_common_password_forms_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert "[REDACTED:" in out
    for part in re.split(r"[ @:]", secret):
        if len(part) >= 4:
            assert part not in out, out


PASSWORD_LOOK_ALIKES = [
    "mysql -p shop",  # -p alone prompts; shop is the database
    "mysql -P 3306 -h db",  # -P is the port
    "mysql -p$DB_PASS shop",  # a variable, not a literal
    "mkdir -p hunter2/src",
    "ssh -p 2222 deploy@host",
    "docker run -p 8080:80 nginx",
    "cp -p a.txt b.txt",
    "unzip -p archive.zip file.txt",
    "git commit -p -m 'wip'",
    "FIRST_PASS=1",
    "BYPASS=true",
    "PASS: 12 tests, FAIL: 0",
    "compiler_pass = inline",
    "ssh://git@github.com:22/org/repo.git",
    "http://host:8080/path@v2",
    "https://user@host:8443/x",
    "git@github.com:org/repo.git",
    "PWD=/home/me/project",
    "sshpass -p $SSHPASS ssh host",
]


@pytest.mark.parametrize("text", PASSWORD_LOOK_ALIKES)
def test_password_look_alikes_stay(text: str) -> None:
    assert redact(text) == text


# -- secrets right after a control sequence, an escaped newline or %22 ----------------------

TOKEN = "ghp_" + A36


@pytest.mark.parametrize(
    "before",
    [
        "\x1b[1m",
        "\x1b[0;32m",
        "\\u001b[1m",
        "\\n",
        "\\t",
        "\\r",
        '\\"',
        "%22",
        "%0A",
        "\x1b]0;t\x07",
    ],
)
def test_a_secret_after_a_control_sequence_is_redacted(before: str) -> None:
    for secret in (TOKEN, "sk_live_" + A36[:24], "AKIA" + "Q3XZ7VJ4PLKW2MNB", "xoxb-" + A36[:20]):
        out = redact(f"output: {before}{secret} done")
        assert secret not in out, out
        assert before in out


@pytest.mark.parametrize("text", ["abc" + TOKEN, "x" + "AKIA" + "Q3XZ7VJ4PLKW2MNB", "n" + TOKEN])
def test_a_token_inside_a_word_is_still_left_alone(text: str) -> None:
    assert redact(text) == text

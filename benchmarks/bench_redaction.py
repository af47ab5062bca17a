"""Redaction benchmark: recall on planted secrets, false positives on ordinary text, speed.

    python benchmarks/bench_redaction.py                 # run (needs passdown importable)
    python benchmarks/bench_redaction.py --write-corpus  # regenerate the checked-in corpus

Corpus:
- redaction_corpus/planted.jsonl: fake secrets of every kind in realistic contexts (shell,
  .env, JSON, YAML, Python, curl, prose, escaped JSONL as in agent transcripts). A sample is
  recalled when none of its `secrets` strings survives redaction.
- ordinary text: redaction_corpus/ordinary_synthetic.txt (git log/status/diff output, UUIDs,
  agent-transcript ids, digests, versions, base64 data), plus, read at run time, the running
  interpreter's standard library sources (tests excluded: they plant credentials on purpose)
  and the prose docs installed on this machine. Every redaction there counts as a false
  positive; examples are printed so the figure can be judged.

The baseline is detect-secrets (Yelp) with its default plugins and filters, run in the same
process the way it scans a file, each value it reports replaced in its line.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import string
import sys
import sysconfig
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

CORPUS = Path(__file__).parent / "redaction_corpus"
PLANTED = CORPUS / "planted.jsonl"
SYNTHETIC = CORPUS / "ordinary_synthetic.txt"
STDLIB_CAP = 10_000_000  # bytes of stdlib sources to use
PROSE_CAP = 3_000_000
BASELINE_CAP = 1_500_000  # detect-secrets is slow: its FP rate and speed use this much

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEXL = "0123456789abcdef"


# --------------------------------------------------------------------------- planted corpus


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(
        json.dumps({"sub": str(rng.randrange(10**9)), "iat": 1716200000, "role": "admin"}).encode()
    )
    return f"{header}.{payload}.{_b64url(rng.randbytes(32))}"


def _pem(rng: random.Random, label: str) -> tuple[str, list[str]]:
    lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(rng.randint(6, 12))]
    lines.append(base64.b64encode(rng.randbytes(20)).decode())
    block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
    return block, lines


def _password(rng: random.Random) -> str:
    return rng.choice(
        [
            _r(rng, ALNUM, 10) + rng.choice("!#%*") + _r(rng, string.digits, 2),
            "-".join(
                rng.choice(["correct", "horse", "battery", "staple", "orbit", "maple"])
                for _ in range(4)
            )
            + str(rng.randrange(10, 99)),
            _r(rng, ALNUM, 24),
            "Summer" + str(rng.randrange(2000, 2030)) + "!",
        ]
    )


# Contexts: {s} is the secret, {name} a variable name fitting the kind.
SELF_EVIDENT_CONTEXTS = [
    "export {name}={s}",
    '{name}="{s}"',
    '{{"{lname}": "{s}", "region": "us-east-1"}}',
    "  {lname}: {s}",
    'client = Client({lname}="{s}", timeout=30)',
    "I put {s} into the config and the request now returns 200.",
    "2024-05-01T10:00:00Z DEBUG using credential {s} for upload (attempt 2)",
    '{{"type":"tool_use","input":{{"command":"echo \\"{s}\\" > ~/.cred && ./deploy.sh"}}}}',
    "$ ./run.sh --verbose {s}",
]
NAMED_CONTEXTS = [
    "export {name}={s}",
    '{name}="{s}"',
    "{name}='{s}'",
    '{{"{lname}": "{s}", "region": "us-east-1"}}',
    "  {lname}: {s}",
    '{lname} = "{s}"',
    '{{"type":"tool_use","input":{{"command":"export {name}=\\"{s}\\" && make deploy"}}}}',
]


def _self_evident(kind: str, gen: Callable[[random.Random], str], name: str):
    def make(rng: random.Random) -> list[dict]:
        out = []
        for ctx in SELF_EVIDENT_CONTEXTS:
            s = gen(rng)
            text = ctx.format(s=s, name=name, lname=name.lower())
            out.append({"kind": kind, "secrets": [s], "text": text})
        return out

    return make


def _named(kind: str, gen: Callable[[random.Random], str], names: list[str]):
    def make(rng: random.Random) -> list[dict]:
        out = []
        for i, ctx in enumerate(NAMED_CONTEXTS):
            s = gen(rng)
            name = names[i % len(names)]
            text = ctx.format(s=s, name=name, lname=name.lower())
            out.append({"kind": kind, "secrets": [s], "text": text})
        return out

    return make


def _private_keys(rng: random.Random) -> list[dict]:
    out = []
    labels = [
        "RSA PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "EC PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "DSA PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ]
    for label in labels:
        block, lines = _pem(rng, label)
        out.append(
            {
                "kind": "private_key",
                "secrets": lines,
                "text": f"Here is the deploy key, keep it safe:\n\n{block}\n\nThen run ssh-add.",
            }
        )
    block, lines = _pem(rng, "RSA PRIVATE KEY")
    escaped = json.dumps({"type": "user", "message": {"content": f"use this key\n{block}\nthanks"}})
    out.append({"kind": "private_key", "secrets": lines, "text": escaped})
    block, lines = _pem(rng, "PRIVATE KEY")
    out.append(
        {
            "kind": "private_key",
            "secrets": lines,
            "text": 'GCP_KEY="' + block.replace("\n", "\\n") + '"',
        }
    )
    block, lines = _pem(rng, "OPENSSH PRIVATE KEY")
    truncated = "\n".join(block.splitlines()[:5])
    out.append(
        {
            "kind": "private_key",
            "secrets": lines[:4],
            "text": f"$ cat ~/.ssh/id_ed25519\n{truncated}\n[output truncated]",
        }
    )
    return out


def _aws_secret(rng: random.Random) -> list[dict]:
    out = []
    for i in range(6):
        s = _r(rng, B64, 40)
        text = [
            f"export AWS_SECRET_ACCESS_KEY={s}",
            f"[default]\naws_access_key_id = AKIA{_r(rng, string.ascii_uppercase + '234567', 16)}\n"
            f"aws_secret_access_key = {s}\n",
            json.dumps(
                {
                    "Credentials": {
                        "AccessKeyId": "ASIA" + _r(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
                        "SecretAccessKey": s,
                        "Expiration": "2024-05-01T12:00:00Z",
                    }
                },
                indent=2,
            ),
            f'boto3.client("s3", aws_secret_access_key="{s}")',
            f"AWS secret access key: {s}",
            f"$ aws configure set aws_secret_access_key {s}",
        ][i]
        out.append({"kind": "aws_secret_key", "secrets": [s], "text": text})
    return out


def _auth_headers(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(3):
        tok = _r(rng, ALNUM, 32) + "." + _r(rng, B64URL, 20)
        out.append(
            {
                "kind": "auth_header",
                "secrets": [tok],
                "text": f"curl -sS -H 'Authorization: Bearer {tok}' https://api.example.com/v1/items",
            }
        )
    tok = _r(rng, ALNUM, 40)
    out.append(
        {
            "kind": "auth_header",
            "secrets": [tok],
            "text": json.dumps({"headers": {"Authorization": f"Bearer {tok}", "Accept": "*/*"}}),
        }
    )
    tok = _r(rng, ALNUM, 36)
    out.append(
        {
            "kind": "auth_header",
            "secrets": [tok],
            "text": f"> GET /api HTTP/1.1\n> Host: example.com\n> Authorization: Token {tok}\n",
        }
    )
    tok = _r(rng, ALNUM + "-_", 28)
    out.append(
        {
            "kind": "auth_header",
            "secrets": [tok],
            "text": f"the server rejected bearer {tok} with 401",
        }
    )
    for _ in range(3):
        cred = base64.b64encode(f"deploy:{_password(rng)}".encode()).decode()
        out.append(
            {
                "kind": "auth_header",
                "secrets": [cred],
                "text": f'curl -H "Authorization: Basic {cred}" https://ci.example.com/job',
            }
        )
    pw = _password(rng)
    out.append(
        {
            "kind": "auth_header",
            "secrets": [pw],
            "text": f"curl -u admin:{pw} https://jenkins.internal/api/json",
        }
    )
    return out


def _url_passwords(rng: random.Random) -> list[dict]:
    out = []
    templates = [
        "DATABASE_URL=postgres://app:{p}@db.internal:5432/app",
        "git clone https://oauth2:{p}@gitlab.com/team/repo.git",
        "redis-cli -u redis://:{p}@cache:6379/0",
        '{{"broker_url": "amqp://guest:{p}@rabbit:5672//"}}',
        "mongosh 'mongodb+srv://admin:{p}@cluster0.abcde.mongodb.net/test'",
        "Connecting to mysql://root:{p}@127.0.0.1:3306/shop failed: timeout",
        "pip install --index-url https://__token__:{p}@pypi.internal/simple pkg",
    ]
    for t in templates:
        p = _password(rng).replace("#", "x").replace("%", "x")
        out.append({"kind": "url_password", "secrets": [p], "text": t.format(p=p)})
    return out


def _assignments(rng: random.Random) -> list[dict]:
    cases = [
        ("DB_PASSWORD={p}", None),
        ("POSTGRES_PASSWORD='{p}'", None),
        ('SECRET_KEY = "{p}"', None),
        ('  "client_secret": "{p}",', None),
        ("password: {p}", None),
        ("mysql -u root --password={p} shop", None),
        ("psql --password {p}", None),
        ("API_TOKEN={p} ./sync.sh", None),
        ('settings.apiKey = "{p}";', None),
        ("JWT_SECRET_KEY={p}", None),
        ("WEBHOOK_SIGNING_SECRET={p}", None),
        ('{{"password":"{p}","user":"ops"}}', None),
        ("smtp_pass = {p}", "random"),
        ("  private_key_passphrase: {p}", None),
        ('DJANGO_SECRET_KEY="{p}"', "django"),
        ("password: changeme", "fixed"),
        ("export ENCRYPTION_KEY={p}", "random"),
        ("const credentials = '{p}';", None),
        ("X-Api-Key: {p}", "random"),
        ("cookie: sessionid={p}", "random"),
        ("TWILIO_AUTH_TOKEN={p}", "hex"),
    ]
    out = []
    for tmpl, style in cases:
        if style == "random":
            p = _r(rng, ALNUM, 32)
        elif style == "django":
            p = _r(rng, ALNUM + "!@#%^&*(-_=+)", 50).replace("{", "").replace("}", "")
        elif style == "hex":
            p = _r(rng, HEXL, 32)
        elif style == "fixed":
            p = "changeme"
        else:
            p = _password(rng)
        out.append({"kind": "secret_assignment", "secrets": [p], "text": tmpl.format(p=p)})
    return out


def _near_names(rng: random.Random) -> list[dict]:
    out = []
    for t in [
        "The API key is {s}, use it for the staging run.",
        "new secret: {s}",
        "my access key {s} expired yesterday",
        "Use token `{s}` for the bot.",
        "credentials = {s}",
    ]:
        s = _r(rng, ALNUM, 8) + rng.choice("+/_-") + _r(rng, ALNUM, 24)
        out.append({"kind": "high_entropy_secret", "secrets": [s], "text": t.format(s=s)})
    return out


def _azure(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(3):
        k = base64.b64encode(rng.randbytes(64)).decode()
        out.append(
            {
                "kind": "azure_key",
                "secrets": [k.rstrip("=")],
                "text": "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;"
                f"AccountName=prodstore;AccountKey={k};EndpointSuffix=core.windows.net",
            }
        )
        k = base64.b64encode(rng.randbytes(32)).decode()
        out.append(
            {
                "kind": "azure_key",
                "secrets": [k.rstrip("=")],
                "text": '{"ServiceBus": "Endpoint=sb://orders.servicebus.windows.net/;'
                f'SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={k}"}}',
            }
        )
    sig = _r(rng, ALNUM, 40) + "%3D"
    out.append(
        {
            "kind": "azure_key",
            "secrets": [sig[:40]],
            "text": f"az storage blob download --blob-url 'https://x.blob.core.windows.net/c/f"
            f"?sv=2022-11-02&ss=b&srt=o&sp=r&se=2024-06-01&sig={sig}'",
        }
    )
    return out


def _slack_webhooks(rng: random.Random) -> list[dict]:
    out = []
    for ctx in [
        'SLACK_WEBHOOK_URL="{u}"',
        'curl -X POST -d \'{{"text":"deployed"}}\' {u}',
        "notify: {u}",
        "posting to {u} ...ok",
    ]:
        path = f"T{_r(rng, string.ascii_uppercase + string.digits, 8)}/B{_r(rng, string.ascii_uppercase + string.digits, 10)}/{_r(rng, ALNUM, 24)}"
        out.append(
            {
                "kind": "slack_webhook",
                "secrets": [path.split("/", 1)[1]],
                "text": ctx.format(u=f"https://hooks.slack.com/services/{path}"),
            }
        )
    return out


def _gen_github(rng: random.Random) -> str:
    prefix = rng.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"])
    if prefix == "github_pat_":
        return prefix + _r(rng, ALNUM, 22) + "_" + _r(rng, ALNUM, 59)
    return prefix + _r(rng, ALNUM, 36)


def _gen_slack(rng: random.Random) -> str:
    p = rng.choice(["xoxb", "xoxp", "xoxa", "xoxr", "xoxs"])
    return f"{p}-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 13)}-{_r(rng, ALNUM, 24)}"


def _gen_openai(rng: random.Random) -> str:
    style = rng.randrange(3)
    if style == 0:
        return "sk-" + _r(rng, ALNUM, 20) + "T3BlbkFJ" + _r(rng, ALNUM, 20)
    if style == 1:
        return "sk-proj-" + _r(rng, B64URL, 74) + "T3BlbkFJ" + _r(rng, B64URL, 74)
    return "sk-svcacct-" + _r(rng, B64URL, 74) + "T3BlbkFJ" + _r(rng, B64URL, 74)


GENERATORS: list[Callable[[random.Random], list[dict]]] = [
    _private_keys,
    _self_evident(
        "aws_access_key",
        lambda r: r.choice(["AKIA", "ASIA"]) + _r(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "AWS_ACCESS_KEY_ID",
    ),
    _aws_secret,
    _self_evident("github_token", _gen_github, "GITHUB_TOKEN"),
    _self_evident("gitlab_token", lambda r: "glpat-" + _r(r, B64URL, 20), "GITLAB_TOKEN"),
    _self_evident("slack_token", _gen_slack, "SLACK_BOT_TOKEN"),
    _slack_webhooks,
    _self_evident("openai_key", _gen_openai, "OPENAI_API_KEY"),
    _self_evident(
        "anthropic_key", lambda r: "sk-ant-api03-" + _r(r, B64URL, 93) + "AA", "ANTHROPIC_API_KEY"
    ),
    _self_evident("google_api_key", lambda r: "AIza" + _r(r, B64URL, 35), "GOOGLE_API_KEY"),
    _self_evident(
        "stripe_key",
        lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + _r(r, ALNUM, 99),
        "STRIPE_SECRET_KEY",
    ),
    _self_evident("jwt", _jwt, "SESSION_JWT"),
    _auth_headers,
    _url_passwords,
    _assignments,
    _near_names,
    _self_evident("npm_token", lambda r: "npm_" + _r(r, ALNUM, 36), "NPM_TOKEN"),
    _self_evident(
        "huggingface_token", lambda r: "hf_" + _r(r, string.ascii_letters, 34), "HF_TOKEN"
    ),
    _self_evident(
        "sendgrid_key", lambda r: f"SG.{_r(r, B64URL, 22)}.{_r(r, B64URL, 43)}", "SENDGRID_API_KEY"
    ),
    _self_evident("twilio_key", lambda r: r.choice(["AC", "SK"]) + _r(r, HEXL, 32), "TWILIO_SID"),
    _azure,
    _self_evident(
        "pypi_token", lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, B64URL, 140), "PYPI_TOKEN"
    ),
]


def generate_planted(seed: int = 20240501) -> list[dict]:
    rng = random.Random(seed)
    return [sample for gen in GENERATORS for sample in gen(rng)]


# ---------------------------------------------------------------------- ordinary synthetic


def generate_ordinary(seed: int = 7) -> str:
    """Text that looks busy but holds no secret: what a handoff is mostly made of."""
    rng = random.Random(seed)
    words = [
        "fix",
        "parser",
        "handle",
        "torn",
        "lines",
        "add",
        "tests",
        "refactor",
        "store",
        "migrate",
        "schema",
        "bump",
        "version",
        "update",
        "docs",
        "rename",
        "module",
        "speed",
        "up",
        "export",
        "redact",
        "output",
    ]
    files = [
        "src/passdown/cli/export.py",
        "src/passdown/store/sqlite.py",
        "tests/test_cli.py",
        "README.md",
        "pyproject.toml",
        "src/passdown/agents/claude.py",
        "docs/design.md",
    ]
    parts: list[str] = []
    for _ in range(1500):
        h = _r(rng, HEXL, 40)
        parts.append(
            f"commit {h}\nAuthor: Dev {rng.randrange(99)} <dev{rng.randrange(99)}@example.com>\n"
            f"Date:   Mon May {rng.randrange(1, 29)} 10:{rng.randrange(10, 59)}:00 2024 +0200\n\n"
            f"    {' '.join(rng.choices(words, k=6))}\n\n"
            f" {rng.choice(files)} | {rng.randrange(1, 200)} {'+' * rng.randrange(1, 30)}\n"
        )
        parts.append(f"{h[:7]} {' '.join(rng.choices(words, k=5))}\n")
        parts.append(f"{_r(rng, HEXL, 12)}..{_r(rng, HEXL, 12)}  main -> origin/main\n")
        parts.append(f" M {rng.choice(files)}\n?? {rng.choice(files)}.bak\n")
        parts.append(f"HEAD is now at {h[:9]} {' '.join(rng.choices(words, k=4))}\n")
        parts.append(
            f"sha256:{_r(rng, HEXL, 64)}  dist/passdown-0.{rng.randrange(9)}.{rng.randrange(9)}.tar.gz\n"
        )
        u = uuid.UUID(int=rng.getrandbits(128), version=4)
        parts.append(
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": str(u),
                    "parentUuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "sessionId": str(u),
                    "requestId": "req_011C" + _r(rng, ALNUM, 20),
                    "message": {
                        "id": "msg_01" + _r(rng, ALNUM, 22),
                        "model": "claude-sonnet-4-5-20250929",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "toolu_01" + _r(rng, ALNUM, 22),
                                "name": "Bash",
                                "input": {"command": f"git show {h[:10]}"},
                            }
                        ],
                        "usage": {
                            "input_tokens": rng.randrange(9999),
                            "output_tokens": rng.randrange(999),
                            "cache_read_input_tokens": rng.randrange(99999),
                        },
                    },
                    "cwd": "/home/dev/passdown",
                    "version": "2.1.3",
                    "gitBranch": "main",
                }
            )
            + "\n"
        )
        parts.append(f'    "integrity": "sha512-{base64.b64encode(rng.randbytes(64)).decode()}",\n')
        parts.append(f"docker pull ghcr.io/org/app@sha256:{_r(rng, HEXL, 64)}\n")
        parts.append(
            f"pip install pydantic=={rng.randrange(1, 3)}.{rng.randrange(12)}.{rng.randrange(9)} "
            f"# --hash=sha256:{_r(rng, HEXL, 64)}\n"
        )
        parts.append(
            f'  "thumbnail": "data:image/png;base64,{base64.b64encode(rng.randbytes(90)).decode()}"\n'
        )
        parts.append(
            f"The cache key is built from the file path and mtime; see key_for({rng.choice(files)!r}).\n"
        )
        parts.append(
            f"sort_key=name, max_tokens={rng.randrange(512, 8192)}, token_count={rng.randrange(999)}\n"
        )
        parts.append(
            f"resolved https://registry.npmjs.org/pkg/-/pkg-{rng.randrange(9)}.{rng.randrange(9)}.0.tgz\n"
        )
    return "".join(parts)


# ----------------------------------------------------------------------------- machine text


def _stdlib_sources(cap: int) -> list[tuple[str, str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = ("test", "tests", "idle_test", "site-packages", "__pycache__")
    out, total = [], 0
    for path in sorted(root.rglob("*.py")):
        if any(part in skip or part.startswith("test_") for part in path.relative_to(root).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        out.append((str(path), text))
        total += len(text.encode())
        if total >= cap:
            break
    return out


def _prose_docs(cap: int) -> list[tuple[str, str]]:
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path("/usr/share/doc"), Path(sys.prefix)]
    pats = ["**/README*", "**/*.txt", "**/*.rst", "**/*.md", "**/changelog*.gz", "**/NEWS*"]
    seen, out, total = set(), [], 0
    for root in roots:
        for pat in pats:
            for path in sorted(root.glob(pat)):
                if path in seen or not path.is_file() or "site-packages" in path.parts:
                    continue
                seen.add(path)
                try:
                    raw = path.read_bytes()
                    if path.suffix == ".gz":
                        raw = gzip.decompress(raw)
                except OSError:
                    continue
                text = raw.decode("utf-8", errors="replace")
                out.append((str(path), text))
                total += len(raw)
                if total >= cap:
                    return out
    return out


# ------------------------------------------------------------------------------ measuring


def _detect_secrets_redactor() -> Callable[[str], str] | None:
    """detect-secrets as a redactor, scanning the way `detect-secrets scan FILE` does (its
    ad-hoc `scan_line` adds an eager mode that flags nearly every word as high entropy).
    It reports values, not spans: each value is replaced where it occurs in its line.
    Call it inside `detect_secrets.settings.default_settings()`."""
    try:
        from detect_secrets.core.scan import _process_line_based_plugins
    except ImportError:
        return None

    def redact(text: str) -> str:
        lines = text.split("\n")
        numbered = list(enumerate(lines, start=1))
        for found in _process_line_based_plugins(lines=numbered, filename="handoff.md"):
            i = found.line_number - 1
            if found.secret_value:
                lines[i] = lines[i].replace(found.secret_value, f"[REDACTED:{found.type}]")
        return "\n".join(lines)

    return redact


def _recall(redact: Callable[[str], str], planted: list[dict]) -> tuple[Counter, Counter, list]:
    total, hit, misses = Counter(), Counter(), []
    for sample in planted:
        out = redact(sample["text"])
        total[sample["kind"]] += 1
        leaked = [s for s in sample["secrets"] if s in out]
        if leaked:
            misses.append((sample["kind"], out[:160]))
        else:
            hit[sample["kind"]] += 1
    return total, hit, misses


def _false_positives(
    redact: Callable[[str], str], docs: list[tuple[str, str]]
) -> tuple[int, float, list]:
    count, size, examples, seconds = 0, 0, [], 0.0
    for name, text in docs:
        t0 = time.perf_counter()
        out = redact(text)
        seconds += time.perf_counter() - t0
        size += len(text.encode())
        if out == text:
            continue
        for line in out.splitlines():
            n = line.count("[REDACTED:")
            if n:
                count += n
                if len(examples) < 400:
                    examples.append((Path(name).name, line.strip()[:140]))
    return count, size / 1e6 / seconds if seconds else 0.0, examples


def _report(
    title: str, redact: Callable[[str], str], planted: list[dict], docs: list[tuple[str, str]]
) -> None:
    size_mb = sum(len(t.encode()) for _, t in docs) / 1e6
    total, hit, misses = _recall(redact, planted)
    print(f"\n=== {title} ===")
    print(f"recall on {sum(total.values())} planted samples, {len(total)} kinds:")
    for kind in sorted(total):
        print(f"  {kind:22} {hit[kind]:3}/{total[kind]:<3} {100 * hit[kind] / total[kind]:5.1f}%")
    print(
        f"  {'overall':22} {sum(hit.values()):3}/{sum(total.values()):<3} "
        f"{100 * sum(hit.values()) / sum(total.values()):5.1f}%"
    )
    for kind, out in misses[:12]:
        print(f"  missed {kind}: {out!r}")
    fp, speed, examples = _false_positives(redact, docs)
    print(
        f"false positives on {size_mb:.1f} MB of ordinary text: {fp} redactions "
        f"({fp / size_mb:.2f} per MB)"
    )
    rng = random.Random(1)
    for name, line in rng.sample(examples, min(12, len(examples))):
        print(f"  fp {name}: {line}")
    print(f"throughput on ordinary text: {speed:.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write-corpus", action="store_true", help="regenerate the corpus files")
    parser.add_argument("--no-baseline", action="store_true", help="skip detect-secrets")
    args = parser.parse_args()
    if args.write_corpus:
        CORPUS.mkdir(exist_ok=True)
        with PLANTED.open("w") as f:
            for sample in generate_planted():
                f.write(json.dumps(sample) + "\n")
        SYNTHETIC.write_text(generate_ordinary())
        print(f"wrote {PLANTED} and {SYNTHETIC}")
        return

    from passdown._redact import redact

    planted = [json.loads(line) for line in PLANTED.read_text().splitlines()]
    docs = [(str(SYNTHETIC), SYNTHETIC.read_text())]
    docs += _stdlib_sources(STDLIB_CAP) + _prose_docs(PROSE_CAP)
    print(
        f"python {sys.version.split()[0]}; ordinary corpus: {len(docs)} files, "
        f"{sum(len(t.encode()) for _, t in docs) / 1e6:.1f} MB (synthetic git/ids, stdlib, docs)"
    )
    _report("passdown._redact", redact, planted, docs)

    baseline = None if args.no_baseline else _detect_secrets_redactor()
    if baseline is None:
        print("\n=== detect-secrets: skipped (not installed or --no-baseline) ===")
        return
    from detect_secrets.settings import default_settings

    small = _subset(docs, BASELINE_CAP)
    with default_settings():  # all default plugins and filters
        _report(
            "detect-secrets (default plugins and filters, file-scan mode)", baseline, planted, small
        )
    _report("passdown._redact on the same subset", redact, planted, small)


def _subset(docs: list[tuple[str, str]], cap: int) -> list[tuple[str, str]]:
    """The same mix of ordinary text, cut to a size detect-secrets scans in reasonable time:
    a slice of the synthetic file, then every 8th stdlib/doc file."""
    small = [(docs[0][0], docs[0][1][: cap // 4])]
    total = len(small[0][1])
    for name, text in docs[1::8]:
        small.append((name, text))
        total += len(text)
        if total >= cap:
            break
    return small


if __name__ == "__main__":
    main()

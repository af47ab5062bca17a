"""What the team-server-as-a-store tests share: `passdown serve`'s app in a thread, or
as a real process, and a throwaway certificate authority with a certificate for
127.0.0.1 (made with `cryptography`, which the MCP SDK's pyjwt[crypto] brings)."""

from __future__ import annotations

import datetime
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import uvicorn

from passdown.mcp._http import build_app
from passdown.store import Store

SRC = Path(__file__).resolve().parents[1] / "src"


class Served:
    """`passdown serve`'s app over `backing`, on a loopback port, in a thread (https
    when given a certificate and its key)."""

    def __init__(self, backing: Store, tls: tuple[Path, Path] | None = None) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            build_app(backing),
            log_level="warning",
            ssl_certfile=str(tls[0]) if tls else None,
            ssl_keyfile=str(tls[1]) if tls else None,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class Serve:
    """`passdown serve --port 0 --json` on loopback with `store` (the test's database),
    its own data folder under `folder`; `url` once it says it is serving."""

    def __init__(
        self,
        folder: Path,
        store: str,
        *,
        scheme: str = "http",
        certfile: Path | None = None,
        keyfile: Path | None = None,
        ca: Path | None = None,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PASSDOWN_")}
        env.update(PASSDOWN_DATA_DIR=str(folder / "data"), HOME=str(folder), PYTHONPATH=str(SRC))
        tls = ["--certfile", str(certfile), "--keyfile", str(keyfile)] if certfile else []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "passdown",
                "serve",
                "--port",
                "0",
                "--json",
                "--store",
                store,
                *tls,
            ],
            env=env,
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the server's first line, or EOF when it failed
        if not line:
            self.proc.wait(10)
            assert self.proc.stderr is not None
            raise AssertionError(f"passdown serve did not start: {self.proc.stderr.read()}")
        self.url = json.loads(line)["url"].rstrip("/")
        assert self.url.startswith(f"{scheme}://127.0.0.1:"), self.url

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(15)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """(certificate chain, key) for 127.0.0.1 and localhost, signed by a CA made here;
    the chain file (server certificate, then the CA's) is also the clients' CA bundle."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "passdown test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    chain = folder / "server.pem"
    chain.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    )
    key_file = folder / "server.key"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return chain, key_file

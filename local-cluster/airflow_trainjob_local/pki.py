"""Credentials of the local cluster: a CA, the apiserver's serving certificate, static tokens, the SA key.

Everything is generated once per state directory with the ``cryptography`` library and kept across
``down``/``up``, so kubeconfigs and service-account tokens stay valid while the etcd data lives. Private keys and
the token file are written with mode 0600. Nothing here prints or logs a secret; callers get file paths.
"""

from __future__ import annotations

import csv
import datetime
import io
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Validity of the generated certificates, days. Long, because the state directory may live for years and a
#: local cluster has no rotation; the CA never leaves the machine.
VALIDITY_DAYS = 3650

#: Static token users: name -> groups. Both are cluster admins (``system:masters`` bypasses RBAC): the admin
#: for people, tests and the local workload components; the controller-manager for its garbage collector and
#: namespace controllers, which must read and delete every resource type, custom ones included.
ADMIN_USER = "admin"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
TOKEN_USERS: dict[str, tuple[str, ...]] = {
    ADMIN_USER: ("system:masters",),
    CONTROLLER_MANAGER_USER: ("system:masters",),
}


@dataclass(frozen=True)
class Credentials:
    """Paths of the generated files (PEM unless noted)."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    #: RSA key that signs service-account tokens (``--service-account-signing-key-file``).
    service_account_key: Path
    #: Its public half (``--service-account-key-file``).
    service_account_pub: Path
    #: ``--token-auth-file``: CSV rows ``token,user,uid,"group1,group2"``.
    token_file: Path

    def token(self, user: str) -> str:
        """The static token of ``user`` (see :data:`TOKEN_USERS`).

        :raises KeyError: ``user`` has no token in the file.
        """
        with self.token_file.open(newline="") as handle:
            for row in csv.reader(handle):
                if len(row) >= 2 and row[1] == user:
                    return row[0]
        raise KeyError(f"no token for user {user!r} in {self.token_file}")


def credential_paths(pki_dir: Path) -> Credentials:
    """Where the credentials live in ``pki_dir``, whether or not they exist yet."""
    return Credentials(
        ca_cert=pki_dir / "ca.crt",
        ca_key=pki_dir / "ca.key",
        serving_cert=pki_dir / "apiserver.crt",
        serving_key=pki_dir / "apiserver.key",
        service_account_key=pki_dir / "service-account.key",
        service_account_pub=pki_dir / "service-account.pub",
        token_file=pki_dir / "tokens.csv",
    )


def ensure_credentials(pki_dir: Path) -> Credentials:
    """Generate whatever of the cluster's credentials is missing in ``pki_dir`` and return their paths.

    Idempotent: existing files are kept (a serving certificate is re-issued only when its key or the CA
    was regenerated). The serving certificate is valid for ``127.0.0.1``, ``localhost`` and the in-cluster names
    of the ``kubernetes`` service.

    :raises OSError: the directory or a file cannot be written.
    """
    pki_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(pki_dir, 0o700)
    creds = credential_paths(pki_dir)
    fresh_ca = not (creds.ca_cert.exists() and creds.ca_key.exists())
    if fresh_ca:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _issue(
            subject="airflow-trainjob-local-ca",
            public_key=ca_key.public_key(),
            issuer_key=ca_key,
            issuer_cert=None,
            is_ca=True,
        )
        _write_key(creds.ca_key, ca_key)
        write_atomic(creds.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    if fresh_ca or not (creds.serving_cert.exists() and creds.serving_key.exists()):
        ca_key = cast(
            ec.EllipticCurvePrivateKey,  # the CA key this module generated and wrote
            serialization.load_pem_private_key(creds.ca_key.read_bytes(), password=None),
        )
        ca_cert = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(
            subject="kube-apiserver",
            public_key=key.public_key(),
            issuer_key=ca_key,
            issuer_cert=ca_cert,
            is_ca=False,
            dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
            ip_addresses=("127.0.0.1",),
        )
        _write_key(creds.serving_key, key)
        write_atomic(creds.serving_cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    if not (creds.service_account_key.exists() and creds.service_account_pub.exists()):
        # RSA, because that is what service-account token signing is specified and tested with (RS256).
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write_key(creds.service_account_key, sa_key)
        pub = sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        write_atomic(creds.service_account_pub, pub, 0o644)
    if not creds.token_file.exists():
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for uid, (user, groups) in enumerate(TOKEN_USERS.items(), start=1):
            writer.writerow([secrets.token_urlsafe(32), user, f"uid-{uid}", ",".join(groups)])
        write_atomic(creds.token_file, out.getvalue().encode(), 0o600)
    return creds


def _issue(
    *,
    subject: str,
    public_key,
    issuer_key,
    issuer_cert: x509.Certificate | None,
    is_ca: bool,
    dns_names: tuple[str, ...] = (),
    ip_addresses: tuple[str, ...] = (),
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_cert.subject if issuer_cert else name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        # Backdated a little so a clock that is slightly behind does not reject a brand-new certificate.
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )
    if is_ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        sans = [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
        builder = (
            builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _write_key(path: Path, key) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    write_atomic(path, pem, 0o600)


def write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Write atomically with ``mode`` from the start (a secret is never briefly world-readable)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def issue_serving_certificate(
    pki_dir: Path,
    subject: str,
    *,
    dns_names: tuple[str, ...] = ("localhost",),
    ip_addresses: tuple[str, ...] = ("127.0.0.1",),
) -> tuple[bytes, bytes]:
    """A new serving certificate signed by the cluster CA in ``pki_dir`` (e.g. for a test proxy in front of
    the apiserver, so clients keep verifying against the kubeconfig's CA).

    :returns: ``(certificate PEM, private key PEM)``; nothing is written (the caller decides where, and with what mode).
    :raises OSError: the CA files are missing (the cluster was never brought up).
    """
    creds = credential_paths(pki_dir)
    ca_key = serialization.load_pem_private_key(creds.ca_key.read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _issue(
        subject=subject,
        public_key=key.public_key(),
        issuer_key=ca_key,
        issuer_cert=ca_cert,
        is_ca=False,
        dns_names=dns_names,
        ip_addresses=ip_addresses,
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def ensure_status_server_certificate(pki_dir: Path) -> tuple[Path, Path]:
    """The TrainJob status server's serving certificate and key in ``pki_dir`` (``status-server.crt``/``.key``,
    for ``127.0.0.1`` and ``localhost``, signed by the cluster CA), issued when missing or older than the CA.

    :returns: ``(certificate path, key path)``.
    :raises OSError: the CA files are missing or the files cannot be written.
    """
    cert_path, key_path = pki_dir / "status-server.crt", pki_dir / "status-server.key"
    ca_path = credential_paths(pki_dir).ca_cert
    fresh = cert_path.exists() and key_path.exists() and cert_path.stat().st_mtime >= ca_path.stat().st_mtime
    if not fresh:
        cert, key = issue_serving_certificate(pki_dir, "trainer-status-server")
        write_atomic(key_path, key, 0o600)
        write_atomic(cert_path, cert, 0o644)
    return cert_path, key_path

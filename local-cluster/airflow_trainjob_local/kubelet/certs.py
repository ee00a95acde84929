"""The kubelet's self-signed serving certificate (the apiserver proxies ``pods/log`` to it over HTTPS).

Like a kubelet without ``--tls-cert-file``, which writes a self-signed ``kubelet.crt``/``kubelet.key`` pair into its
cert dir at first start and reuses it afterwards. The apiserver accepts it because it is started without
``--kubelet-certificate-authority``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=365)


def ensure_serving_cert(cert_dir: Path, node_name: str) -> tuple[Path, Path]:
    """Return ``(cert_path, key_path)``, generating them if missing or expiring within a day.

    The certificate names ``node_name``, ``localhost`` and ``127.0.0.1``; the key (ECDSA P-256) is written
    with mode 0600.

    :raises OSError: ``cert_dir`` cannot be written.
    """
    cert_path, key_path = cert_dir / "kubelet.crt", cert_dir / "kubelet.key"
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        expires = cert.not_valid_after_utc
        if expires - datetime.datetime.now(datetime.timezone.utc) > datetime.timedelta(days=1):
            return cert_path, key_path

    cert_dir.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{node_name}@kubelet")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName(node_name),
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key_bytes)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path

"""A certificate authority of the tests' own, made with `cryptography`: a CA, server certificates for
127.0.0.1 and localhost, and client certificates whose common name is the caller's name in a web
configuration file's `access`.

    ca = CertificateAuthority.create(directory)          # directory/ca.crt, ca.key
    server = ca.issue("server")                          # directory/server.crt, server.key (serverAuth)
    collector = ca.issue("collector", client=True)       # CN=collector (clientAuth)

Keys are EC P-256: quick to make, so a test can make a fresh set for a rotation; `issue(..., rsa_bits=2048)`
makes an RSA leaf instead (what cert-manager and `openssl req -newkey rsa:2048` give by default), for the
benchmark of what a handshake costs with each.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID = datetime.timedelta(days=2)


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path
    certificate: x509.Certificate

    @property
    def serial(self) -> int:
        return self.certificate.serial_number


@dataclass
class CertificateAuthority:
    directory: Path
    name: str
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def cert(self) -> Path:
        return self.directory / f"{self.name}.crt"

    @staticmethod
    def create(directory: Path, name: str = "ca") -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"flamewatch test {name}")])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                       .public_key(key.public_key()).serial_number(x509.random_serial_number())
                       .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALID)
                       .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                    content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False,
                                                    encipher_only=False, decipher_only=False), critical=True)
                       .sign(key, hashes.SHA256()))
        directory.mkdir(parents=True, exist_ok=True)
        authority = CertificateAuthority(directory, name, key, certificate)
        _write(authority.cert, certificate.public_bytes(serialization.Encoding.PEM))
        _write(directory / f"{name}.key", _pem_key(key))
        return authority

    def issue(self, common_name: str, client: bool = False, file_name: str | None = None,
              directory: Path | None = None, names: Sequence[str] = (), rsa_bits: int | None = None) -> Issued:
        """A leaf certificate: a server's for 127.0.0.1, localhost and the DNS `names` (a compose
        network's service names), or (client) a caller's named `common_name`. Written as <file_name or
        common_name>.crt and .key; with `rsa_bits`, an RSA key of that size instead of EC P-256."""
        key = rsa.generate_private_key(65537, rsa_bits) if rsa_bits else ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
                   .issuer_name(self.certificate.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALID)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if not client:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), *map(x509.DNSName, names),
                 x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        where = directory or self.directory
        name = file_name or common_name
        issued = Issued(where / f"{name}.crt", where / f"{name}.key", certificate)
        _write(issued.cert, certificate.public_bytes(serialization.Encoding.PEM))
        _write(issued.key, _pem_key(key))
        return issued


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes) -> None:
    """Written beside and renamed into place, as a secret mount or cert-manager replaces a file: a
    reader sees the old file or the new one, never half of one."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)

"""The web configuration file: every `*.good.yml` in testdata/web loads to what is checked here, and every
`*.bad.yml` fails with exactly the message given (its YAML path first)."""

from pathlib import Path

import pytest

from flamewatch.auth.webconfig import Access, WebConfig, load_web_config, parse_web_config
from flamewatch.clientconfig import authorization_header
from flamewatch.configreader import ConfigError

TESTDATA = Path(__file__).parent / "testdata" / "web"


def _prometheus(config: WebConfig) -> None:
    assert config.tls is not None and config.tls.cert_file == str(TESTDATA / "server.crt")
    assert not config.tls.verifies_clients
    assert list(config.users) == ["alice"] and config.users["alice"].startswith(b"$2y$10$")
    assert config.access is None and config.access_of("alice") == Access.everything()
    assert config.authenticates


def _tenants(config: WebConfig) -> None:
    assert sorted(config.users) == ["alice", "grafana"] and sorted(config.tokens.values()) == ["ci"]
    assert config.access_of("alice") == Access(read=("team-a", "team-b"), write=("team-a",))
    assert config.access_of("grafana") == Access(read=("*",))
    assert config.access_of("ci") == Access(write=("team-b",), admin=True)
    assert config.access_of("someone else") is None
    assert authorization_header(config.client.basic_auth, None) == "Basic YWxpY2U6YWxpY2UtcGFzc3dvcmQ="


def _mtls(config: WebConfig) -> None:
    assert config.tls.client_auth_type == "RequireAndVerifyClientCert" and config.tls.requires_client_cert
    assert config.tls.client_ca_file == str(TESTDATA / "ca.crt")
    assert config.authenticates  # by the certificate's common name
    assert config.client.tls.ca_file == str(TESTDATA / "ca.crt")
    assert config.tls.min_version == "TLS13"


def _empty(config: WebConfig) -> None:
    assert config == WebConfig(source=str(TESTDATA / "empty.good.yml")) and not config.authenticates


GOOD = {"prometheus.good.yml": _prometheus, "tenants.good.yml": _tenants, "mtls.good.yml": _mtls,
        "empty.good.yml": _empty}

EXPECTED_ERRORS = {
    "access_without_credentials.bad.yml": "access: names who may do what, but there is no credential to check: add "
                                          "basic_auth_users, bearer_tokens or tls_server_config with client "
                                          "certificates",
    "bad_client_auth_type.bad.yml": "tls_server_config.client_auth_type: expected one of NoClientCert, "
                                    "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, "
                                    'RequireAndVerifyClientCert, got "Always"',
    "bad_tenant.bad.yml": 'access.alice.read[0]: invalid tenant "../etc": use 1-64 characters of letters, digits, '
                          '"_", "." or "-", or "*" for every tenant',
    "cipher_suites.bad.yml": "tls_server_config.cipher_suites: not supported; Flamewatch uses TLS 1.2 or later with "
                             "Python's default ciphers: remove it",
    "client_both.bad.yml": "client.authorization: cannot be used together with basic_auth",
    "missing_cert.bad.yml": f'tls_server_config.cert_file: no such file "{TESTDATA / "nowhere.crt"}"',
    "name_with_colon.bad.yml": 'basic_auth_users.a:b: invalid name "a:b": no colons, spaces or control characters',
    "plain_password.bad.yml": "basic_auth_users.alice: not a bcrypt hash (expected $2y$10$ and 53 characters, as "
                              "htpasswd -nBC 10 or flamewatch web hash-password make): the file holds hashes, never "
                              "passwords",
    "plain_token.bad.yml": 'bearer_tokens.ci: expected "sha256:" and 64 lowercase hex digits (flamewatch web '
                           "hash-token makes it): the file holds hashes of tokens, never the tokens",
    "require_any_without_ca.bad.yml": "tls_server_config.client_auth_type: RequireAnyClientCert needs client_ca_file "
                                      "here: Flamewatch's TLS checks every client certificate it asks for, so name "
                                      "the CA that signs them (or use NoClientCert)",
    "same_name.bad.yml": 'bearer_tokens.ci: "ci" is also a user of basic_auth_users: give each credential a name of '
                         "its own, access is given by name",
    "same_token.bad.yml": "bearer_tokens.ci2: the same token as bearer_tokens.ci: give each its own",
    "token_not_in_access.bad.yml": "bearer_tokens.ci: not in access: say which tenants ci may read and write",
    "unknown_access_field.bad.yml": "access.alice.reed: unknown field (did you mean read?)",
    "unknown_top_level.bad.yml": "basic_auth_user: unknown field (did you mean basic_auth_users?)",
    "user_not_in_access.bad.yml": "basic_auth_users.bob: not in access: say which tenants bob may read and write, "
                                  "e.g. access: {bob: {read: [team-a]}}",
    "verify_without_ca.bad.yml": "tls_server_config.client_auth_type: RequireAndVerifyClientCert needs "
                                 "client_ca_file, the CA that signs the clients' certificates",
}


def test_every_testdata_file_is_in_a_table():
    assert sorted(p.name for p in TESTDATA.glob("*.good.yml")) == sorted(GOOD)
    assert sorted(p.name for p in TESTDATA.glob("*.bad.yml")) == sorted(EXPECTED_ERRORS)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_file(name):
    GOOD[name](load_web_config(str(TESTDATA / name)))


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_bad_file(name):
    with pytest.raises(ConfigError) as info:
        load_web_config(str(TESTDATA / name))
    assert str(info.value) == f"{TESTDATA / name}: {EXPECTED_ERRORS[name]}"
    assert info.value.source == str(TESTDATA / name)


def test_a_missing_file_says_so():
    with pytest.raises(ConfigError, match=r"nowhere.yml: cannot read the web configuration file: No such file"):
        load_web_config("nowhere.yml")


def test_yaml_errors_have_their_position():
    with pytest.raises(ConfigError, match=r"invalid YAML at line 3, column 1"):
        parse_web_config("basic_auth_users:\n  a: [\n")

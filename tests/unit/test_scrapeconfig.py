"""The configuration file: every `*.good.yml` in testdata/config loads to the dataclasses checked here, and
every `*.bad.yml` fails with exactly the message in EXPECTED_ERRORS."""

from pathlib import Path

import pytest

from flamewatch.collector.config import (
    Authorization,
    BasicAuth,
    ConfigError,
    FileConfig,
    FileSDConfig,
    GlobalConfig,
    IncidentsConfig,
    KubernetesNamespaces,
    KubernetesSDConfig,
    KubernetesSelector,
    PprofEndpoint,
    ProfilingConfig,
    ScrapeConfig,
    StaticConfig,
    TLSConfig,
    default_pprof_config,
    load_config,
    parse_config,
)
from flamewatch.labels.relabel import RelabelConfig

TESTDATA = Path(__file__).parent / "testdata" / "config"
EXAMPLE = Path(__file__).parents[2] / "examples" / "flamewatch.yaml"


def _pprof(cfg: FileConfig, job: int = 0) -> dict[str, PprofEndpoint]:
    return cfg.scrape_configs[job].profiling_config.pprof_config


def check_minimal(cfg: FileConfig) -> None:
    (job,) = cfg.scrape_configs
    assert job.job_name == "demo"
    assert (job.scrape_interval_s, job.scrape_timeout_s, job.scheme) == (10.0, 10.0, "http")
    assert job.static_configs == (StaticConfig(("127.0.0.1:6060",), {}),)
    assert job.profiling_config == ProfilingConfig("", default_pprof_config(10.0))
    assert _pprof(cfg)["process_cpu"] == PprofEndpoint(True, "/debug/pprof/profile", True, 10)
    assert _pprof(cfg)["memory"] == PprofEndpoint(True, "/debug/pprof/allocs", False, None, 5.0)
    assert job == ScrapeConfig("demo", static_configs=(StaticConfig(("127.0.0.1:6060",)),))


def check_global_inherit(cfg: FileConfig) -> None:
    assert cfg.global_config == GlobalConfig(30.0, 20.0)
    timings = [(j.scrape_interval_s, j.scrape_timeout_s) for j in cfg.scrape_configs]
    assert timings == [(30.0, 20.0), (5.0, 5.0), (30.0, 3.0)]
    assert _pprof(cfg, 0)["process_cpu"].seconds == 30
    assert _pprof(cfg, 1)["process_cpu"].seconds == 5


def check_global_timeout_default(cfg: FileConfig) -> None:
    assert cfg.global_config == GlobalConfig(4.0, 4.0)
    assert (cfg.scrape_configs[0].scrape_interval_s, cfg.scrape_configs[0].scrape_timeout_s) == (4.0, 4.0)


def check_pprof_merge(cfg: FileConfig) -> None:
    pprof = _pprof(cfg)
    assert pprof["memory"] == PprofEndpoint(True, "/debug/pprof/heap", False, None, 5.0)
    assert pprof["goroutine"] == PprofEndpoint(False, "/debug/pprof/goroutine", False, None)
    assert pprof["mutex"] == PprofEndpoint(True, "/debug/pprof/mutex", True, 15)  # delta: seconds = interval
    assert pprof["threads"] == PprofEndpoint(True, "/debug/pprof/threadcreate", False, None)
    assert pprof["process_cpu"] == PprofEndpoint(True, "/debug/pprof/profile", True, 15)
    assert list(pprof) == ["process_cpu", "memory", "goroutine", "mutex", "block", "threads"]


def check_path_prefix(cfg: FileConfig) -> None:
    profiling = cfg.scrape_configs[0].profiling_config
    assert profiling.path_prefix == "/service-a"
    assert cfg.scrape_configs[0].scrape_timeout_s == 0.5
    assert profiling.endpoints() == {
        "process_cpu": PprofEndpoint(True, "/service-a/debug/pprof/profile", True, 3),
        "memory": PprofEndpoint(True, "/service-a/debug/pprof/allocs", False, None),  # 500ms: fast is no faster
        "goroutine": PprofEndpoint(True, "/service-a/debug/pprof/goroutine", False, None),
    }


def check_https_auth(cfg: FileConfig) -> None:
    job = cfg.scrape_configs[0]
    assert job.scheme == "https"
    assert job.params == {"debug": ("0",), "gc": ("1", "2")}
    assert job.basic_auth == BasicAuth("scraper", password_file="/etc/flamewatch/password")
    assert job.authorization is None
    assert job.tls_config == TLSConfig("/etc/ssl/ca.pem", "/etc/ssl/client.pem", "/etc/ssl/client.key", "api.internal")
    assert job.static_configs == (
        StaticConfig(("api.internal:443", "[::1]:6060"), {"env": "prod", "region": "eu_west"}),
    )


def check_bearer(cfg: FileConfig) -> None:
    assert cfg.scrape_configs[0].authorization == Authorization(credentials_file="/var/run/secrets/token")
    assert cfg.scrape_configs[1].authorization == Authorization("Token", credentials="s3cret")
    assert "s3cret" not in repr(cfg)


def check_file_sd(cfg: FileConfig) -> None:
    assert cfg.scrape_configs[0].file_sd_configs == (
        FileSDConfig(("targets/*.json", "more/*.yaml"), 60.0),
        FileSDConfig(("static.yml",), 300.0),
    )
    assert cfg.scrape_configs[0].static_configs == ()


def check_relabel_rules(cfg: FileConfig) -> None:
    rules = cfg.scrape_configs[0].relabel_configs
    assert rules[0] == RelabelConfig(source_labels=("__address__",), regex="(.+):\\d+", target_label="host")
    assert [rule.action for rule in rules] == ["replace", "labelmap", "hashmod", "keep", "labeldrop"]
    assert rules[2].modulus == 4


def check_storage(cfg: FileConfig) -> None:
    assert cfg.scrape_configs == ()
    assert cfg.storage["object_store"]["bucket"] == "flamewatch"
    assert cfg.storage["postgres"] == {"dsn": "postgresql://flamewatch@db/flamewatch"}


def check_empty(cfg: FileConfig) -> None:
    assert cfg == FileConfig()


def check_nulls(cfg: FileConfig) -> None:
    assert cfg.global_config == GlobalConfig()
    assert cfg.scrape_configs == (ScrapeConfig("nulls"),)


def check_durations(cfg: FileConfig) -> None:
    assert cfg.global_config == GlobalConfig(90.0, 10.0)
    assert (cfg.scrape_configs[0].scrape_interval_s, cfg.scrape_configs[0].scrape_timeout_s) == (20.0, 2.5)
    assert (cfg.scrape_configs[1].scrape_interval_s, cfg.scrape_configs[1].scrape_timeout_s) == (1.5, 1.5)
    assert _pprof(cfg, 1)["process_cpu"].seconds == 1  # whole seconds, at least one


def check_kubernetes_sd(cfg: FileConfig) -> None:
    assert cfg.scrape_configs[0].kubernetes_sd_configs == (
        KubernetesSDConfig("pod", kubeconfig_file="/etc/kube/config",
                           namespaces=KubernetesNamespaces(("default", "web")),
                           selectors=(KubernetesSelector("pod", "app=web", "spec.nodeName=node-1"),)),
        KubernetesSDConfig("endpointslice", api_server="https://10.0.0.1:6443",
                           namespaces=KubernetesNamespaces(own_namespace=True),
                           selectors=(KubernetesSelector("service", "team=a"),)),
        KubernetesSDConfig("service"),
    )


def check_incidents(cfg: FileConfig) -> None:
    pods, quiet, services = cfg.scrape_configs
    assert pods.incidents == IncidentsConfig(True) and pods.watches_pods() == pods.kubernetes_sd_configs
    assert _pprof(cfg, 0)["memory"] == PprofEndpoint(True, "/debug/pprof/heap", False, None, 2.0)
    assert quiet.incidents == IncidentsConfig(False) and quiet.watches_pods() == ()
    assert _pprof(cfg, 1)["memory"].fast_scrape_interval_s is None  # 0s: off
    assert services.watches_pods() == ()  # no pod discovery: nothing to watch
    assert _pprof(cfg, 2)["memory"].fast_scrape_interval_s is None  # the default 5s is no faster than 3s


GOOD = {
    "incidents.good.yml": check_incidents,
    "kubernetes_sd.good.yml": check_kubernetes_sd,
    "minimal.good.yml": check_minimal,
    "global_inherit.good.yml": check_global_inherit,
    "global_timeout_default.good.yml": check_global_timeout_default,
    "pprof_merge.good.yml": check_pprof_merge,
    "path_prefix.good.yml": check_path_prefix,
    "https_auth.good.yml": check_https_auth,
    "bearer.good.yml": check_bearer,
    "file_sd.good.yml": check_file_sd,
    "relabel.good.yml": check_relabel_rules,
    "storage.good.yml": check_storage,
    "empty.good.yml": check_empty,
    "nulls.good.yml": check_nulls,
    "durations.good.yml": check_durations,
}

EXPECTED_ERRORS = {
    "incidents_unknown_field.bad.yml": "scrape_configs[0].incidents.enable: unknown field (did you mean enabled?)",
    "pprof_fast_not_faster.bad.yml": "scrape_configs[0].profiling_config.pprof_config.memory.fast_scrape_interval: "
    "5s must be shorter than scrape_interval 5s (0s turns fast scraping off)",
    "kubernetes_sd_unknown_role.bad.yml": 'scrape_configs[0].kubernetes_sd_configs[0].role: unknown role "ingress", '
    "expected one of pod, endpoints, endpointslice, service, node",
    "kubernetes_sd_selector_role.bad.yml": 'scrape_configs[0].kubernetes_sd_configs[0].selectors[0].role: "service" '
    "cannot narrow role pod (expected pod)",
    "kubernetes_sd_server_and_kubeconfig.bad.yml":
        "scrape_configs[0].kubernetes_sd_configs[0].kubeconfig_file: cannot be used together with api_server",
    "kubernetes_sd_unknown_field.bad.yml":
        "scrape_configs[0].kubernetes_sd_configs[0].namespaces.name: unknown field (did you mean names?)",
    "auth_basic_and_bearer.bad.yml": "scrape_configs[0].authorization: cannot be used together with basic_auth",
    "bad_duration.bad.yml": 'scrape_configs[0].scrape_interval: invalid duration "10 seconds": expected a number '
    "of seconds (10, 0.5) or amounts with units y, w, d, h, m, s, ms from largest to smallest (1h30m, 500ms)",
    "duplicate_job_name.bad.yml": 'scrape_configs[1].job_name: "demo" is already used by scrape_configs[0]',
    "duplicate_key.bad.yml": 'invalid YAML at line 4, column 5: duplicate key "scrape_interval"',
    "file_sd_extension.bad.yml":
        'scrape_configs[0].file_sd_configs[0].files[0]: "targets/*.txt" must end in .json, .yml or .yaml',
    "global_timeout_exceeds_interval.bad.yml": "global.scrape_timeout: 1m must not exceed scrape_interval 5s",
    "label_name.bad.yml": 'scrape_configs[0].static_configs[0].labels: "service-name" is not a valid label name',
    "label_value_number.bad.yml":
        "scrape_configs[0].static_configs[0].labels.version: expected a string, got a number",
    "missing_job_name.bad.yml": "scrape_configs[0].job_name: required",
    "not_a_list.bad.yml": "scrape_configs[0].static_configs[0].targets: expected a list, got a string",
    "password_and_file.bad.yml":
        "scrape_configs[0].basic_auth.password_file: cannot be used together with password",
    "pprof_custom_without_path.bad.yml": "scrape_configs[0].profiling_config.pprof_config.threads.path: required",
    "pprof_enabled_string.bad.yml":
        "scrape_configs[0].profiling_config.pprof_config.goroutine.enabled: expected true or false, got a string",
    "pprof_path_without_slash.bad.yml":
        'scrape_configs[0].profiling_config.pprof_config.memory.path: "debug/pprof/heap" must start with /',
    "pprof_seconds_zero.bad.yml":
        "scrape_configs[0].profiling_config.pprof_config.process_cpu.seconds: must be greater than zero, got 0",
    "pprof_unknown_field.bad.yml":
        "scrape_configs[0].profiling_config.pprof_config.memory.pth: unknown field (did you mean path?)",
    "relabel_bad_regex.bad.yml": 'scrape_configs[0].relabel_configs[0].regex: invalid regular expression "[a-": '
    "unterminated character set at position 0",
    "relabel_hashmod_without_modulus.bad.yml":
        "scrape_configs[0].relabel_configs[0].modulus: required for action hashmod and must be greater than zero",
    "relabel_labelmap_source_labels.bad.yml":
        "scrape_configs[0].relabel_configs[0].source_labels: not allowed for action labelmap",
    "relabel_replace_without_target.bad.yml":
        "scrape_configs[0].relabel_configs[0].target_label: required for action replace",
    "relabel_unknown_action.bad.yml": 'scrape_configs[0].relabel_configs[1].action: unknown action "rename", '
    "expected one of replace, keep, drop, hashmod, labelmap, labeldrop, labelkeep",
    "scheme.bad.yml": 'scrape_configs[0].scheme: must be http or https, got "ftp"',
    "storage_not_mapping.bad.yml": "storage: expected a mapping, got a string",
    "target_with_scheme.bad.yml":
        'scrape_configs[0].static_configs[0].targets[0]: "http://127.0.0.1:6060" must be host:port',
    "target_without_port.bad.yml": 'scrape_configs[0].static_configs[0].targets[1]: "localhost" must be host:port',
    "timeout_exceeds_interval.bad.yml": "scrape_configs[2].scrape_timeout: 15s must not exceed scrape_interval 10s",
    "tls_cert_without_key.bad.yml": "scrape_configs[0].tls_config.key_file: required when cert_file is set",
    "top_level_list.bad.yml": "top level: expected a mapping, got a list",
    "unknown_field.bad.yml": "scrape_configs[0].static_config: unknown field (did you mean static_configs?)",
    "unknown_top_level.bad.yml": "scrape_config: unknown field (did you mean scrape_configs?)",
    "yaml_syntax.bad.yml": "invalid YAML at line 4, column 1: expected ',' or ']', but got '<stream end>' "
    "(while parsing a flow sequence at line 3)",
    # PyYAML raised ValueError / OverflowError of its own for these (found by fuzzing, fuzz/README.md).
    "yaml_escape_not_unicode.bad.yml":
        "invalid YAML at line 2, column 23: an escape sequence is not a Unicode character",
    "yaml_bad_date.bad.yml": "invalid YAML at line 1, column 27: month must be in 1..12",
}


def test_every_testdata_file_is_in_a_table():
    assert sorted(p.name for p in TESTDATA.glob("*.good.yml")) == sorted(GOOD)
    assert sorted(p.name for p in TESTDATA.glob("*.bad.yml")) == sorted(EXPECTED_ERRORS)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_file(name):
    GOOD[name](load_config(TESTDATA / name))


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_bad_file(name):
    with pytest.raises(ConfigError) as info:
        load_config(TESTDATA / name)
    assert str(info.value) == EXPECTED_ERRORS[name]
    assert info.value.source == str(TESTDATA / name)


def test_example_file_loads():
    cfg = load_config(EXAMPLE)
    demo, flamewatch = cfg.scrape_configs
    assert (demo.job_name, demo.static_configs[0].targets) == ("demo", ("127.0.0.1:6060",))
    assert demo.profiling_config.pprof_config == default_pprof_config(10.0)
    assert (flamewatch.job_name, flamewatch.static_configs[0].targets) == ("flamewatch", ("127.0.0.1:8080",))
    assert flamewatch.profiling_config.endpoints() == {  # its heap only with --self-profiling.heap
        "process_cpu": PprofEndpoint(True, "/debug/pprof/profile", True, 10),
    }
    memory = flamewatch.profiling_config.pprof_config["memory"]
    assert memory == PprofEndpoint(False, "/debug/pprof/heap", False, None, 5.0)


def test_parse_config_names_its_source():
    with pytest.raises(ConfigError) as info:
        parse_config("scrape_configs: 3", source="inline.yml")
    assert (str(info.value), info.value.source) == ("scrape_configs: expected a list, got a number", "inline.yml")


def test_missing_file():
    missing = TESTDATA / "does-not-exist.yml"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert str(info.value) == f"cannot read {missing}: No such file or directory"


def test_profile_names_must_be_label_names():
    text = "scrape_configs: [{job_name: a, profiling_config: {pprof_config: {go-heap: {path: /heap}}}}]"
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert str(info.value) == ('scrape_configs[0].profiling_config.pprof_config.go-heap: "go-heap" is not a valid '
                               "profile name (letters, digits and _)")


def test_scrape_config_defaults_follow_its_interval():
    job = ScrapeConfig("direct", scrape_interval_s=30.0)
    assert job.scrape_timeout_s == 10.0
    assert job.profiling_config.pprof_config["process_cpu"].seconds == 30
    assert ScrapeConfig("fast", scrape_interval_s=2.0).scrape_timeout_s == 2.0


FUZZ_INPUTS = Path(__file__).parent / "testdata" / "fuzz"


def test_the_fuzzed_escape_is_a_config_error():
    with pytest.raises(ConfigError, match="^invalid YAML at line 1, column 5: an escape sequence is not a "
                                          "Unicode character$"):
        load_config(FUZZ_INPUTS / "config-escape-out-of-range.yml")


@pytest.mark.parametrize("text", ["[" * 5000, "scrape_configs:\n  - job_name: " + "{a: " * 3000])
def test_deep_nesting_is_a_config_error(text):
    with pytest.raises(ConfigError, match=r"^invalid YAML at line \d+, column \d+: nested too deeply$"):
        parse_config(text)


def test_characters_yaml_does_not_allow_are_a_config_error():
    # Found by fuzzing after the loader was built outside the error handling (fuzz/README.md).
    with pytest.raises(ConfigError, match="^invalid YAML: unacceptable character #x0000: special characters are not "
                                          "allowed"):
        parse_config("\0scrape_configs: []")

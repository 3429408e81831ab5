"""Names that are not label names made into ones (`flamewatch.labels.sanitize`), the one rule every push path
(OTLP attributes, Pyroscope push labels and `/ingest` tags) and Kubernetes discovery use."""

import pytest

from flamewatch.labels.labelset import is_valid_label_name
from flamewatch.labels.sanitize import label_name, name_part


@pytest.mark.parametrize(("text", "name"), [
    ("service.name", "service_name"),
    ("k8s.pod.name", "k8s_pod_name"),
    ("host-name", "host_name"),
    ("k8s-pod/name", "k8s_pod_name"),
    ("1st", "_1st"),
    ("2xx", "_2xx"),
    ("größe", "gr__e"),
    ("__name__", "__name__"),
    ("plain", "plain"),
])
def test_a_text_becomes_a_valid_label_name(text: str, name: str):
    assert label_name(text) == name
    assert is_valid_label_name(name)
    assert label_name(name) == name


def test_a_part_of_a_name_keeps_its_leading_digit_as_prometheus_does():
    assert name_part("2xx.app/name") == "2xx_app_name"


def test_an_empty_text_stays_empty_for_label_validation_to_refuse():
    assert label_name("") == ""

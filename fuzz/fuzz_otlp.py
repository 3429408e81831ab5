"""Fuzz target: the OTLP profiles converter (`flamewatch.ingester.otlp`) and the receiver's body parser.

An input is an `ExportProfilesServiceRequest` as protobuf bytes. It is parsed as the receiver does
(`parse_protobuf`) and converted under small limits, so the limit checks before conversion are reached
too. Expected: `OtlpDecodeError` (not a request), `OtlpInvalidProfile` (an index outside the dictionary,
a bad time...), `LimitExceeded` (a count over a limit).

Checks on a request that converts:
- every profile of the request is either converted or refused, once, in request order, each refusal
  an `OtlpInvalidProfile` or `LimitExceeded` naming its profile;
- each converted pprof decodes and passes `validate` under the same limits, has one sample type and
  as many samples as the OTLP profile, and sample values that are each the sum of the OTLP values
  (or the number of timestamps);
- every series label name is made of `[A-Za-z0-9_]` and does not start with a digit.
"""

from __future__ import annotations

import re
import sys

import atheris
from harness import check, main

with atheris.instrument_imports(include=["flamewatch"]):
    from flamewatch.ingester.config import IngestLimits
    from flamewatch.ingester.errors import OtlpDecodeError, OtlpInvalidProfile
    from flamewatch.ingester.otlp import convert
    from flamewatch.ingester.otlp_receiver import parse_protobuf
    from flamewatch.pprof import LimitExceeded, ProfileLimits, decode, validate

LIMITS = IngestLimits(max_samples=20_000, max_stack_depth=256, max_profiles_per_push=64, max_otlp_entries=200_000)
PPROF_LIMITS = ProfileLimits(max_samples=LIMITS.max_samples, max_stack_depth=LIMITS.max_stack_depth)
EXPECTED = (OtlpDecodeError, OtlpInvalidProfile, LimitExceeded)
# Empty is let through here: label validation, the next step of every push, refuses it with its own message.
LABEL_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?")
INT64 = 1 << 63


def target(data: bytes) -> None:
    request = parse_protobuf(data)
    converted, rejected = convert(request, LIMITS)
    profiles = [(f"resource_profiles[{r}].scope_profiles[{s}].profiles[{p}]", profile)
                for r, resource in enumerate(request.resource_profiles)
                for s, scope in enumerate(resource.scope_profiles) for p, profile in enumerate(scope.profiles)]
    outcomes = sorted([c.where for c in converted] + [r.where for r in rejected], key=[w for w, _ in profiles].index)
    check(outcomes == [w for w, _ in profiles], f"profiles converted or refused {outcomes}, expected each once")
    for r in rejected:
        check(isinstance(r.error, OtlpInvalidProfile | LimitExceeded) and r.reason.startswith(r.where + ": "),
              f"refusal {r.error!r} does not name its profile")
    by_where = dict(profiles)
    for c in converted:
        _check_converted(c, by_where[c.where])


def _check_converted(c, otlp_profile) -> None:
    for name in c.labels:
        check(bool(LABEL_NAME.fullmatch(name)), f"series label name {name!r} is not a label name")
    profile = decode(c.pprof, 64 << 20)
    validate(profile, PPROF_LIMITS)
    check(len(profile.sample_types) == 1, "a converted profile has one sample type")
    check(len(profile.samples) == len(otlp_profile.samples), "samples lost or added")
    expected = [sum(s.values) if len(s.values) else len(s.timestamps_unix_nano) for s in otlp_profile.samples]
    check(all(-INT64 <= v < INT64 for v in expected), "a sample whose values sum past int64 was accepted")
    check(profile.samples.values[:, 0].tolist() == expected, "sample values differ from the OTLP sums")


if __name__ == "__main__":
    main("otlp", target, EXPECTED)
    sys.exit(0)

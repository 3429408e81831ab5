"""`make compose-base-images` writes the stand-in images' tags into `.env`, keeping the user's other lines."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "compose" / "base_images.py"
spec = importlib.util.spec_from_file_location("base_images", SCRIPT)
base_images = importlib.util.module_from_spec(spec)
spec.loader.exec_module(base_images)


def test_tags_replace_their_lines_and_the_rest_is_kept():
    before = "# mine\nFLAMEWATCH_UI_PORT=9090\nFLAMEWATCH_PYTHON_IMAGE=python:3.11-slim\n"
    after = base_images.updated_env(before, {"FLAMEWATCH_PYTHON_IMAGE": "flamewatch-test/python:1",
                                             "FLAMEWATCH_MINIO_IMAGE": "flamewatch-test/minio:2"})
    assert after == ("# mine\nFLAMEWATCH_UI_PORT=9090\nFLAMEWATCH_PYTHON_IMAGE=flamewatch-test/python:1\n"
                     "FLAMEWATCH_MINIO_IMAGE=flamewatch-test/minio:2\n")


def test_a_missing_env_file_gets_just_the_tags():
    assert base_images.updated_env("", {"FLAMEWATCH_NODE_IMAGE": "n:1"}) == "FLAMEWATCH_NODE_IMAGE=n:1\n"

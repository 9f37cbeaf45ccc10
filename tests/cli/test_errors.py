"""User errors are titled domain errors (lib/errors.py): the CLI maps them to exit 2 with their message,
the pages show their title; a plain ValueError is left for real bugs."""
from __future__ import annotations

import inspect

import pytest

from lib import errors
from lib.analysis import distributions
from lib.cli.main import main
from lib.judging.config import JudgeConfig
from lib.judging.parsers import check_spec


def test_every_domain_error_has_its_own_title():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, Exception) and c.__module__ == errors.__name__]
    assert len(classes) >= 15
    for cls in classes:
        assert issubclass(cls, errors.JudgeLensError), cls
        assert cls is errors.JudgeLensError or cls.title != errors.JudgeLensError.title, cls


def test_endpoint_settings_are_a_titled_user_error():
    with pytest.raises(errors.EndpointError, match=r"must start with http:// or https:// \(got 'ftp://x'\)") as exc:
        JudgeConfig(base_url="ftp://x", model="m")
    assert exc.value.title == "Judge endpoint settings" and isinstance(exc.value, ValueError)


def test_a_bad_parser_spec_is_a_titled_user_error():
    with pytest.raises(errors.JudgeLensError, match="Unknown parser kind 'nope'") as exc:
        check_spec({"kind": "nope"})
    assert exc.value.title == "Unusable output parser"


def test_an_unknown_counting_unit_is_a_usage_error(store):
    with pytest.raises(errors.UsageError, match="unknown unit 'furlongs'; choose from item, judgment"):
        distributions.score_histogram(store, unit="furlongs")


def test_the_cli_prints_the_message_of_a_user_error_and_exits_2(tmp_path, capsys):
    code = main(["rejudge", "--db", str(tmp_path / "x.duckdb"), "--template", "single-v1", "--model", "m",
                      "--base-url", "ftp://judge.example"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("The base URL must start with http:// or https:// (got 'ftp://judge.example')")
    assert "Traceback" not in err

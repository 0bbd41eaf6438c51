"""Retrieval precision/recall: upstream's exact definitions and the opt-in normalisation."""

from __future__ import annotations

import pytest

from evalatlas.metrics.retrieval import normalise_source, retrieval_precision, retrieval_recall


def test_reference_example():
    # reference section 13: retrieved [server_registry.md] of 2 expected -> P 1.0, R 0.5
    got = ["server_registry.md"]
    want = ["server_registry.md", "datacenter_locations.md"]
    assert retrieval_precision(got, want) == 1.0
    assert retrieval_recall(got, want) == 0.5


def test_empty_retrieved_gives_precision_zero():
    assert retrieval_precision([], ["a.md"]) == 0.0
    assert retrieval_recall([], ["a.md"]) == 0.0


def test_empty_expected_gives_recall_one():
    assert retrieval_recall(["a.md"], []) == 1.0
    assert retrieval_recall([], []) == 1.0
    assert retrieval_precision(["a.md", "b.md"], []) == 0.0


def test_duplicates_count_towards_precision():
    assert retrieval_precision(["a.md", "a.md", "b.md"], ["a.md"]) == pytest.approx(2 / 3)
    assert retrieval_recall(["a.md", "a.md"], ["a.md", "c.md"]) == 0.5


def test_exact_case_sensitive_matching_by_default():
    assert retrieval_precision(["SLA_Policies.md"], ["sla_policies.md"]) == 0.0
    assert retrieval_precision(["docs/sla_policies.md"], ["sla_policies.md"]) == 0.0
    assert retrieval_recall(["Customers"], ["customers"]) == 0.0


def test_opt_in_normalisation():
    got = ["docs/SLA_Policies.md", "C:\\kb\\Team_Directory.md "]
    want = ["sla_policies.md", "team_directory.md", "incident_log.md"]
    assert retrieval_precision(got, want, normalise=True) == 1.0
    assert retrieval_recall(got, want, normalise=True) == pytest.approx(2 / 3)
    assert normalise_source("a/b/C.md/") == "c.md"


def test_sql_table_sources():
    # SQL scenarios: lower-cased table names
    assert retrieval_precision(["customers", "incidents", "oncall"],
                               ["customers", "incidents"]) == pytest.approx(2 / 3)
    assert retrieval_recall(["customers", "incidents", "oncall"],
                            ["customers", "incidents"]) == 1.0

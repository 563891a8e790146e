"""The golden vectors of spec section 8, byte for byte."""

from __future__ import annotations

import pytest

from batchboard import digests, schema
from batchboard.digests import (
    CheckpointDescriptor,
    DefinitionArgument,
    JobParameter,
    RecoveryArgument,
    RecoveryEvidence,
    StepEvidence,
)

NIGHTLY_MANIFEST = {
    "component": {"tasklet": "load-tasklet-1"},
    "delivery_mode": "best_effort",
    "format": 1,
    "job": "nightly-import",
    "kind": "tasklet",
    "restart_state": "none",
    "step": "load",
    "transaction_boundary": "tasklet_completion",
}
NIGHTLY_KEY = "b785f7bdf7b10200a282d461cbef5ce87e136712a510795f06490b8adbcc2899"
MANIFEST_T = "5cc351a4dbe16355e5e61e6cddb33b30c8544f0c37d3d7948c187361279c49a2"


def test_golden_job_instance_key_and_preimage() -> None:
    """Parameters are ordered by name bytes and encoded with 4-byte prefixes."""
    parameters = {
        "region": JobParameter.string("서울"),
        "limit": JobParameter.u64(2**63),
        "count": JobParameter.i64(-2),
        "active": JobParameter.boolean(True),
    }
    assert digests.instance_key_preimage("golden_job", parameters).hex() == (
        "010000000a676f6c64656e5f6a6f6200000006616374697665040100000005636f756e74"
        "02fffffffffffffffe000000056c696d697403800000000000000000000006726567696f"
        "6e0100000006ec849cec9ab8"
    )
    assert digests.instance_key("golden_job", parameters).hex() == (
        "71f12db9e3887de2cf92e93bb63fd4e9e7c536df8fa202212445d18bf2e43604"
    )


@pytest.mark.parametrize(
    ("job_name", "parameters", "expected"),
    [
        (
            "m5_upgrade",
            {},
            "3e765bfe745b94b09d79cc090ebd6a6f28abc0d3900c5aea6d1615c1e171e55f",
        ),
        (
            "nightly-import",
            {"run_date": JobParameter.string("2026-01-01")},
            NIGHTLY_KEY,
        ),
        (
            "mixed",
            {
                "B": JobParameter.u64(0),
                "a": JobParameter.i64(-(2**63)),
                "empty": JobParameter.string(""),
                "flag": JobParameter.boolean(False),
            },
            "38f81d2edcb6b7aecf83482482a5170f5a3d95e5966b5f68b30eb694d045049d",
        ),
    ],
)
def test_instance_keys(
    job_name: str, parameters: dict[str, JobParameter], expected: str
) -> None:
    assert digests.instance_key(job_name, parameters).hex() == expected


def test_empty_fault_state_checksum() -> None:
    assert (
        digests.fault_state_checksum(digests.EMPTY_FAULT_STATE).hex()
        == schema.EMPTY_FAULT_STATE_CHECKSUM
    )


def test_manifest_digests() -> None:
    assert digests.manifest_digest(NIGHTLY_MANIFEST).hex() == MANIFEST_T
    assert digests.manifest_digest(digests.LEGACY_MANIFEST).hex() == (
        "1b6a802e60d288646da5fadc6835b3cdf990b322ef1e6b25f2c00000f8a6034e"
    )


def test_partition_context_checksum() -> None:
    payload = {"zeta": 1, "alpha": {"b": "é/x", "a": [True, None]}, "n": -5}
    envelope = digests.partition_context_envelope(1, "part.ctx", 2, payload)
    assert envelope.decode() == (
        '{"format":"oxide-batch.execution-context","format_version":1,'
        '"payload":{"alpha":{"a":[true,null],"b":"é/x"},"n":-5,"zeta":1},'
        '"schema":"part.ctx","schema_version":2}'
    )
    assert digests.partition_context_checksum(1, "part.ctx", 2, payload).hex() == (
        "23e0fbe19fe7f39c8e96701ea67ad0e842cc1a16c8d1ff2e4afb05de28745479"
    )


def test_canonical_json_refuses_floats() -> None:
    with pytest.raises(ValueError, match="no floats"):
        digests.canonical_json({"a": 1.5})


DEFINITION_T = DefinitionArgument("v1", bytes.fromhex(MANIFEST_T))


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {
                "action": "LAUNCH",
                "target": f"instance-key:{NIGHTLY_KEY}",
                "expected_version": None,
                "reason_code": None,
                "arguments": DEFINITION_T,
            },
            "9fe7181ed0a837deb44273315877909fb2296598a3670eaf4ea43d6ff5661889",
        ),
        (
            {
                "action": "LAUNCH",
                "target": "instance-key:"
                "3e765bfe745b94b09d79cc090ebd6a6f28abc0d3900c5aea6d1615c1e171e55f",
                "expected_version": None,
                "reason_code": None,
                "arguments": DefinitionArgument(
                    digests.LEGACY_REVISION,
                    digests.manifest_digest(digests.LEGACY_MANIFEST),
                ),
            },
            "741f4e699606000430110564fd5694f37950757595d0df12258695c3c4770ee4",
        ),
        (
            {
                "action": "RESTART",
                "target": "instance:7",
                "expected_version": None,
                "reason_code": None,
                "arguments": DEFINITION_T,
            },
            "fb61dbf6ef2daf33d3835d0101e31e0a95bcd5309a54c8a52828ad653867de5a",
        ),
        (
            {
                "action": "STOP",
                "target": "execution:42",
                "expected_version": 3,
                "reason_code": None,
            },
            "82788f21a6fc659f71d70568b47968b0a9073a38d477f6b4edca491db2a294e5",
        ),
        (
            {
                "action": "ABANDON",
                "target": "execution:42",
                "expected_version": 5,
                "reason_code": "OPERATOR_DECISION",
            },
            "c2d71d98cc9c5853b27e528e2abb577f33fbeee91cccd731eb557a74d079a3dd",
        ),
    ],
)
def test_request_digests(kwargs: dict[str, object], expected: str) -> None:
    assert digests.request_digest(**kwargs).hex() == expected  # type: ignore[arg-type]


EVIDENCE_A = RecoveryEvidence(
    execution_id=42,
    status="STARTED",
    attempt=2,
    version=3,
    owner="OTHER_PROCESS",
    updated_at_ms=1785000000123,
    latest_step=StepEvidence(
        77, "STARTED", CheckpointDescriptor(1, "m5.upgrade.position", 1, 18)
    ),
    unknown_commit=False,
    completed_partition=False,
    committed_flow_decision=True,
    ambiguous_external_effect=True,
)
EVIDENCE_B = RecoveryEvidence(
    execution_id=43,
    status="UNKNOWN",
    attempt=1,
    version=6,
    owner="ABSENT",
    updated_at_ms=1785000000000,
    latest_step=None,
    unknown_commit=True,
    completed_partition=False,
    committed_flow_decision=False,
    ambiguous_external_effect=True,
)
EVIDENCE_C = RecoveryEvidence(
    execution_id=44,
    status="STOPPING",
    attempt=3,
    version=11,
    owner="OTHER_PROCESS",
    updated_at_ms=1785000000500,
    latest_step=StepEvidence(90, "UNKNOWN", None),
    unknown_commit=True,
    completed_partition=True,
    committed_flow_decision=False,
    ambiguous_external_effect=False,
)


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (
            EVIDENCE_A,
            "c7141fb9bee81bc58aa4841f9e05cc4df59f65db1ec178b4b78d01632eca0c3c",
        ),
        (
            EVIDENCE_B,
            "5ee518ba44a1f2ab787ee21841bfa0a95ab775a2d638fab738740d2144c83172",
        ),
        (
            EVIDENCE_C,
            "a1de04b077667fab1d43ecae4917285c05a18d556c969c47b00a2b1bd5b15c4c",
        ),
    ],
)
def test_evidence_digests(evidence: RecoveryEvidence, expected: str) -> None:
    assert digests.evidence_digest(evidence).hex() == expected


@pytest.mark.parametrize(
    ("evidence", "arguments", "reason", "expected"),
    [
        (
            EVIDENCE_A,
            ("FAILED", False, "STALE_RECOVERED", 9001),
            "HOST_LOST",
            "cac880fea291d32c043fe456e6bbb03c4a5a1d01004dc3d812d7c36c9dec75fd",
        ),
        (
            EVIDENCE_A,
            ("ABANDONED", False, None, None),
            "HOST_LOST",
            "fe749c11621d2d90afb67b3e6222ae312ed331f809eec210031ff47e6c2424f4",
        ),
        (
            EVIDENCE_B,
            ("FAILED", True, "UNKNOWN_COMMIT", 1),
            "UNKNOWN_EFFECT",
            "3361071a126372c336a8b78d05ca6ccdacb206adb696b5d5e782c29ed023c0c9",
        ),
    ],
)
def test_recover_request_digests(
    evidence: RecoveryEvidence,
    arguments: tuple[str, bool, str | None, int | None],
    reason: str,
    expected: str,
) -> None:
    resulting, unknown_commit, category, failure_id = arguments
    digest = digests.request_digest(
        action="RECOVER",
        target=f"execution:{evidence.execution_id}",
        expected_version=evidence.version,
        reason_code=reason,
        arguments=RecoveryArgument(
            resulting,  # type: ignore[arg-type]
            digests.evidence_digest(evidence),
            unknown_commit,
            category,
            failure_id,
        ),
    )
    assert digest.hex() == expected


@pytest.mark.parametrize(
    ("statuses", "age", "batch", "candidates", "expected"),
    [
        (
            ["STOPPED", "FAILED", "COMPLETED", "ABANDONED"],
            2592000,
            1000,
            [(1, 10, 4), (1, 11, 2), (2, 12, 7)],
            "6abe4cf5f347dc43540fb6d697a0bb1c4529cc798f9e03faabf2905c5c4b55e9",
        ),
        (
            ["FAILED"],
            3600,
            10,
            [],
            "9706a83e0ec26bd76495a5f8ad66e388093a284acee52c40f59dcdc2930dbbd6",
        ),
        (
            ["COMPLETED", "ABANDONED"],
            7200,
            2,
            [(5, 50, 9)],
            "59a5cedb3005d632f9eb16eedf1433a3eb6e6f85a2271c32611c8d12fa18e2ee",
        ),
    ],
)
def test_plan_digests(
    statuses: list[str],
    age: int,
    batch: int,
    candidates: list[tuple[int, int, int]],
    expected: str,
) -> None:
    """Statuses are written in enum order; ages in whole seconds."""
    digest = digests.plan_digest(
        job_name="nightly-import",
        statuses=statuses,
        min_age_seconds=age,
        batch=batch,
        candidates=candidates,
    )
    assert digest.hex() == expected


def test_parameter_envelope_and_descriptors() -> None:
    """Stored parameters round-trip; descriptors drop values."""
    parameters = {
        "run_date": JobParameter.string("2026-01-01"),
        "n": JobParameter.i64(-1),
    }
    document = digests.parameters_json(parameters)
    assert document["run_date"] == {
        "type": "string",
        "identifying": True,
        "value": "2026-01-01",
    }
    assert digests.parameters_from_json(document) == parameters
    assert digests.parameter_descriptors(document) == [
        ("n", "I64"),
        ("run_date", "STRING"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        lambda: JobParameter.u64(-1),
        lambda: JobParameter.i64(2**63),
        lambda: JobParameter("bool", 1),
        lambda: JobParameter("float", 1),  # type: ignore[arg-type]
        lambda: digests.instance_key(" padded", {}),
        lambda: digests.instance_key("x" * 129, {}),
        lambda: digests.instance_key("job", {"bad\nname": JobParameter.boolean(True)}),
        lambda: digests.parameters_from_json({"a": {"type": "string", "value": "x"}}),
    ],
)
def test_parameter_errors(bad: object) -> None:
    with pytest.raises(digests.ParameterError):
        bad()  # type: ignore[operator]

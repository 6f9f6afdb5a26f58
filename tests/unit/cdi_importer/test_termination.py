"""The termination message CDI's controller parses."""

from __future__ import annotations

from pathlib import Path

from kubevirt.cdi_importer.termination import TerminationMessage, write


def test_success_is_cdis_json_in_its_key_order() -> None:
    message = TerminationMessage(scratch_space_required=False, preallocation_applied=False)
    assert (
        message.to_json()
        == '{"scratchSpaceRequired":false,"preallocationApplied":false,"message":"Import Complete"}'
    )


def test_labels_are_included_sorted_and_unset_fields_left_out() -> None:
    message = TerminationMessage(preallocation_applied=True, labels={"b": "2", "a": "1"})
    assert (
        message.to_json()
        == '{"preallocationApplied":true,"labels":{"a":"1","b":"2"},"message":"Import Complete"}'
    )


def test_plain_text_is_one_line_and_no_longer_than_kubelet_keeps(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    write(log, "Unable to process data: first\nsecond" + "x" * 5000)
    text = log.read_text()
    assert text.startswith("Unable to process data: first second")
    assert len(text) == 4096

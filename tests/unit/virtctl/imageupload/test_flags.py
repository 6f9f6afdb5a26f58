"""``virtctl image-upload``'s arguments and flags: KubeVirt's checks, in its order, with its messages."""

from __future__ import annotations

import pytest

from kubevirt.virtctl.imageupload.flags import (
    UploadError,
    UploadInfo,
    check_arity,
    check_default_instancetype,
    parse_args,
    parse_uint,
)

NAME = "test-volume"


def info(**flags: object) -> UploadInfo:
    result = UploadInfo()
    for key, value in flags.items():
        setattr(result, key, value)
    return result


@pytest.mark.parametrize(
    ("message", "arguments", "flags"),
    [
        ("either image-path or archive-path must be provided", (), {}),
        ("expecting two args", ("targetName",), {"size": "500Mi", "image_path": "/dev/null"}),
        ("expecting two args", (), {"size": "500Mi", "image_path": "/dev/null"}),
        ("either image-path or archive-path must be provided", ("dv", NAME), {"size": "500Mi"}),
        (
            "cannot handle both image-path and archive-path, provide only one",
            ("dv", NAME),
            {"image_path": "/dev/null", "archive_path": "/dev/null.tar"},
        ),
        (
            "In archive upload the volume mode should always be filesystem",
            ("dv", NAME),
            {"archive_path": "/dev/null.tar", "block_volume": True},
        ),
        (
            "incompatible --volume-mode 'filesystem' and --block-volume",
            ("dv", NAME),
            {"archive_path": "/dev/null.tar", "block_volume": True, "volume_mode": "filesystem"},
        ),
        (
            "Invalid volume mode 'foo'. Valid values are 'block' and 'filesystem'.",
            ("dv", NAME),
            {"archive_path": "/dev/null.tar", "volume_mode": "foo"},
        ),
        ("cannot use --pvc-name and args", ("foo",), {"name": NAME, "image_path": "/dev/null"}),
        ("invalid resource type foo", ("foo", NAME), {"image_path": "/dev/null"}),
        (
            "--pvc-size and --size can not be specified at the same time",
            ("dv", NAME),
            {"size": "500G", "pvc_size": "50G", "image_path": "/dev/null"},
        ),
    ],
)
def test_bad_arguments_are_refused_with_kubevirts_message(
    message: str, arguments: tuple[str, ...], flags: dict[str, object]
) -> None:
    with pytest.raises(UploadError) as raised:
        parse_args(info(**flags), arguments)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("message", "flags"),
    [
        (
            "--default-instancetype must be provided with --default-instancetype-kind",
            {"default_instancetype_kind": "foo"},
        ),
        (
            "--default-preference must be provided with --default-preference-kind",
            {"default_preference_kind": "foo"},
        ),
        (
            "--default-instancetype and --default-preference cannot be used with --no-create",
            {"default_instancetype": "foo", "no_create": True},
        ),
        (
            "--default-instancetype and --default-preference cannot be used with --no-create",
            {"default_preference": "foo", "no_create": True},
        ),
    ],
)
def test_default_instancetype_flags_go_together(message: str, flags: dict[str, object]) -> None:
    with pytest.raises(UploadError) as raised:
        check_default_instancetype(info(**flags))
    assert str(raised.value) == message


def test_the_kind_argument_decides_between_pvc_and_data_volume() -> None:
    pvc = info(image_path="/img")
    parse_args(pvc, ("PVC", NAME))
    assert (pvc.create_pvc, pvc.name, pvc.archive_upload) == (True, NAME, False)
    dv = info(archive_path="/a.tar", pvc_size="1Gi")
    parse_args(dv, ("dv", NAME))
    assert (dv.create_pvc, dv.archive_upload, dv.image_path, dv.size) == (False, True, "/a.tar", "1Gi")


def test_block_volume_is_the_block_volume_mode() -> None:
    parsed = info(image_path="/img", block_volume=True)
    parse_args(parsed, ("dv", NAME))
    assert parsed.volume_mode == "block"


def test_the_deprecated_pvc_name_skips_the_other_checks() -> None:
    parsed = info(name=NAME, volume_mode="foo", block_volume=True)
    parse_args(parsed, ())
    assert parsed.create_pvc
    assert parsed.volume_mode == "foo"  # never checked, as in KubeVirt
    assert parsed.image_path == ""


def test_more_than_two_arguments_are_refused() -> None:
    check_arity(("dv", NAME))
    with pytest.raises(UploadError, match=r"^accepts at most 2 arg\(s\), received 3$"):
        check_arity(("dv", NAME, "x"))


@pytest.mark.parametrize(
    ("text", "value"), [("0", 0), ("300", 300), ("0x10", 16), ("010", 8), ("0b11", 3), ("0o17", 15)]
)
def test_uint_flags_read_as_pflag_reads_them(text: str, value: int) -> None:
    assert parse_uint(text, "retry") == value


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("-1", "invalid syntax"),
        ("abc", "invalid syntax"),
        ("", "invalid syntax"),
        ("1" * 30, "value out of range"),
    ],
)
def test_bad_uint_flags_fail_with_pflags_message(text: str, why: str) -> None:
    with pytest.raises(UploadError) as raised:
        parse_uint(text, "wait-secs")
    assert str(raised.value) == (
        f'invalid argument "{text}" for "--wait-secs" flag: strconv.ParseUint: parsing "{text}": {why}'
    )

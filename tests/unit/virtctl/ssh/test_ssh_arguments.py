"""virtctl ssh/scp without a connection: the target syntax and its errors (KubeVirt's table), the scp
locations, pflag-style booleans, and the local client's command line with its ProxyCommand."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root
from kubevirt.virtctl.ssh import wrapped
from kubevirt.virtctl.ssh.goflags import GoFlagsCommand, bool_flag
from kubevirt.virtctl.ssh.options import SSHError, SSHOptions, Target, parse_ssh_target
from kubevirt.virtctl.ssh.scp import Transfer, append_remote_base, parse_locations
from kubevirt.virtctl.ssh.wrapped import local_client_command, scp_arguments, ssh_arguments

pytestmark = pytest.mark.timeout(60)

# target, (kind, name, namespace, user) or the error
TARGETS: list[tuple[str, tuple[str, str, str, str] | str]] = [
    ("vmi/testvmi", ("vmi", "testvmi", "", "")),
    ("vmi/testvmi/default", ("vmi", "testvmi", "default", "")),
    ("user@vmi/testvmi", ("vmi", "testvmi", "", "user")),
    ("user@vmi/testvmi/default", ("vmi", "testvmi", "default", "user")),
    ("vm/testvm", ("vm", "testvm", "", "")),
    ("vm/testvm/default", ("vm", "testvm", "default", "")),
    ("user@vm/testvm", ("vm", "testvm", "", "user")),
    ("user@vm/testvm/default", ("vm", "testvm", "default", "user")),
    ("vmi/testvmi.with.dots/default", ("vmi", "testvmi.with.dots", "default", "")),
    ("user@vmi/testvmi.with.dots/default", ("vmi", "testvmi.with.dots", "default", "user")),
    ("vmi/testvmi/default.with.dots", ("vmi", "testvmi", "default.with.dots", "")),
    ("vmi/testvmi.with.dots/default.with.dots", ("vmi", "testvmi.with.dots", "default.with.dots", "")),
    ("VirtualMachineInstances/x", ("vmi", "x", "", "")),
    ("vms/x", ("vm", "x", "", "")),
    ("testvmi", "target must contain type and name separated by '/'"),
    ("user@testvmi", "target must contain type and name separated by '/'"),
    ("vmi/testvmi/", "namespace cannot be empty"),
    ("user@vmi/testvmi/", "namespace cannot be empty"),
    ("vmi/testvmi/default/something", "target is not valid with more than two '/'"),
    ("invalid/testvmi", "unsupported resource type 'invalid'"),
    ("user@invalid/testvmi", "unsupported resource type 'invalid'"),
    ("vmi/", "name cannot be empty"),
    ("user@vmi/", "name cannot be empty"),
    ("", "expected target after '@'"),
    ("/", "unsupported resource type ''"),
    ("//", "namespace cannot be empty"),
    ("user@//", "namespace cannot be empty"),
    (".", "target must contain type and name separated by '/'"),
    ("/.", "unsupported resource type ''"),
    ("@/.", "expected username before '@'"),
    ("user@", "expected target after '@'"),
    ("@", "expected username before '@'"),
    ("@vmi/testvmi", "expected username before '@'"),
    ("a@b@vmi/x", "target must contain type and name separated by '/'"),  # only the part after the first @
    # legacy name.namespace when no namespace follows
    ("vmi/testvmi.with.dots", ("vmi", "testvmi.with", "dots", "")),
    ("user@vmi/testvmi.default", ("vmi", "testvmi", "default", "user")),
    ("vm/testvm.default", ("vm", "testvm", "default", "")),
]


@pytest.mark.parametrize(("text", "expected"), TARGETS)
def test_targets_parse_as_kubevirt_s(text: str, expected: tuple[str, str, str, str] | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(SSHError) as refused:
            parse_ssh_target(text)
        assert str(refused.value) == expected
    else:
        assert parse_ssh_target(text) == Target(*expected)


def test_scp_locations() -> None:
    remote = Target("vmi", "remote", "mynamespace", "cirros")
    assert parse_locations("myfile.yaml", "cirros@vmi/remote/mynamespace:myfile.yaml") == Transfer(
        "myfile.yaml", remote, "myfile.yaml", True
    )
    assert parse_locations("cirros@vmi/remote/mynamespace:dir/a:b", "here") == Transfer(
        "here", remote, "dir/a:b", False
    )
    assert parse_locations("vm/x:", "local") == Transfer("local", Target("vm", "x", ""), "", False)
    with pytest.raises(SSHError) as both_local:
        parse_locations("myfile.yaml", "otherfile.yaml")
    assert str(both_local.value) == (
        'none of the two provided locations seems to be a remote location: "myfile.yaml" to "otherfile.yaml"'
    )
    with pytest.raises(SSHError) as both_remote:
        parse_locations("remotenode:myfile.yaml", "othernode:otherfile.yaml")
    assert str(both_remote.value) == (
        "copying from a remote location to another remote location is not supported: "
        '"remotenode:myfile.yaml" to "othernode:otherfile.yaml"'
    )
    with pytest.raises(SSHError, match="target must contain type and name separated by '/'"):
        parse_locations("f", "remotenode:myfile.yaml")
    with pytest.raises(SSHError, match="unsupported resource type 'pod'"):
        parse_locations("pod/x:f", "here")


def test_the_local_base_follows_the_remote_path_s_last_element() -> None:
    assert append_remote_base("/tmp/local", "dir/file.txt") == "/tmp/local/file.txt"
    assert append_remote_base("/tmp/local", "dir/sub/") == "/tmp/local/sub"
    for nameless in ("", ".", "..", "/", "./", "a/.."):
        assert append_remote_base("/tmp/local", nameless) == "/tmp/local"


# -- the local client ------------------------------------------------------------------------------------


@pytest.fixture
def program(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(wrapped, "program", lambda: "/usr/local/bin/virtctl")
    return "/usr/local/bin/virtctl"


def test_the_ssh_command_line_is_kubevirt_s(program: str) -> None:
    target = Target("fake-kind", "fake-name", "fake-ns")
    options = SSHOptions(port=12345, username="testuser")
    assert local_client_command(options, target, ssh_arguments(options, target, "")) == [
        "ssh",
        "-o",
        f"ProxyCommand={program} port-forward --stdio=true fake-kind/fake-name/fake-ns 12345",
        "testuser@fake-kind.fake-name.fake-ns",
    ]
    options = SSHOptions(
        username="",
        identity_file="/keys/id",
        identity_file_provided=True,
        local_ssh_opts=["-o StrictHostKeyChecking=no", "-v"],
    )
    assert local_client_command(options, target, ssh_arguments(options, target, "ls /")) == [
        "ssh",
        "-o",
        f"ProxyCommand={program} port-forward --stdio=true fake-kind/fake-name/fake-ns 22",
        "-o StrictHostKeyChecking=no",
        "-v",
        "-i",
        "/keys/id",
        "fake-kind.fake-name.fake-ns",
        "ls /",
    ]
    # The default identity file is the local client's business: not named.
    options = SSHOptions(identity_file="/home/me/.ssh/id_rsa", identity_file_provided=False)
    assert "-i" not in local_client_command(options, target, [])


def test_the_scp_command_line_is_kubevirt_s(program: str) -> None:
    target = Target("fake-kind", "fake-name", "fake-ns")
    options = SSHOptions(username="testuser", local_client="scp")
    remote = "testuser@fake-kind.fake-name.fake-ns:/remote/fakepath"
    assert scp_arguments(
        options, target, "/remote/fakepath", "/local", False, recursive=False, preserve=False
    ) == [
        remote,
        "/local",
    ]
    assert scp_arguments(
        options, target, "/remote/fakepath", "/local", True, recursive=True, preserve=True
    ) == [
        "-r",
        "-p",
        "/local",
        remote,
    ]
    assert local_client_command(options, target, ["a", "b"])[:3] == [
        "scp",
        "-o",
        f"ProxyCommand={program} port-forward --stdio=true fake-kind/fake-name/fake-ns 22",
    ]


def test_a_program_path_with_spaces_is_quoted_for_the_proxy_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wrapped, "program", lambda: "/opt/my tools/virtctl")
    option = wrapped.proxy_command_option(Target("vmi", "a", "b"), 22)
    assert option == "ProxyCommand='/opt/my tools/virtctl' port-forward --stdio=true vmi/a/b 22"


# -- through the command ---------------------------------------------------------------------------------


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ctx-ns"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def fake_clients(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: str) -> Path:
    """``ssh`` and ``scp`` on PATH that record their arguments (one per line) and exit with $FAKE_EXIT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv"
    for name in ("ssh", "scp"):
        script = bin_dir / name
        script.write_text(
            f'#!/bin/sh\necho "$0" > {record}\nprintf "%s\\n" "$@" >> {record}\nexit ${{FAKE_EXIT:-0}}\n'
        )
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("USER", "envuser")
    return record


def invoke(kubeconfig: Path, *args: str) -> click.testing.Result:
    return CliRunner().invoke(root, ["--kubeconfig", str(kubeconfig), *args])


def recorded(record: Path) -> list[str]:
    program, *arguments = record.read_text().splitlines()
    return [os.path.basename(program), *arguments]


def test_ssh_runs_the_local_client_by_default(kubeconfig: Path, fake_clients: Path, program: str) -> None:
    result = invoke(kubeconfig, "ssh", "vmi/testvmi", "-c", "uname -a", "-t", "-o Foo=bar", "-p", "2222")
    assert (result.exit_code, result.stderr) == (0, "")
    assert recorded(fake_clients) == [
        "ssh",
        "-o",
        f"ProxyCommand={program} port-forward --stdio=true vmi/testvmi/ctx-ns 2222",
        "-o Foo=bar",
        "envuser@vmi.testvmi.ctx-ns",  # $USER, in the context's namespace
        "uname -a",
    ]
    result = invoke(kubeconfig, "ssh", "-n", "other", "-l", "jdoe", "-i", "/k", "root@vm/testvm.legacy")
    assert result.exit_code == 0
    assert recorded(fake_clients)[3:] == ["-i", "/k", "root@vm.testvm.legacy"]  # the target's user wins


def test_naming_local_ssh_gets_kubevirt_s_deprecation_notice(kubeconfig: Path, fake_clients: Path) -> None:
    # A bare boolean flag does not take the target as its value.
    result = invoke(kubeconfig, "ssh", "--local-ssh", "vmi/testvmi")
    assert result.exit_code == 0
    assert result.stderr == (
        "The --local-ssh flag is deprecated and now defaults to true.\n"
        "\033[0;31mWARNING: The built-in ssh client is affected by multiple CVEs and should not be used!"
        "\033[0m\n"
    )
    assert recorded(fake_clients)[-1] == "envuser@vmi.testvmi.ctx-ns"
    assert invoke(kubeconfig, "ssh", "--local-ssh=true", "vmi/testvmi").stderr.startswith("The --local-ssh")
    refused = invoke(kubeconfig, "ssh", "--local-ssh=maybe", "vmi/testvmi")
    assert refused.exit_code == 2
    assert 'invalid argument "maybe" for "--local-ssh" flag: strconv.ParseBool' in refused.stderr


def test_scp_runs_the_local_scp(kubeconfig: Path, fake_clients: Path, program: str) -> None:
    result = invoke(kubeconfig, "scp", "-r", "--preserve", "dir", "jdoe@vmi/testvmi/ns:/tmp/", "-l", "x")
    assert (result.exit_code, result.stderr) == (0, "")  # no deprecation notice for scp
    assert recorded(fake_clients) == [
        "scp",
        "-o",
        f"ProxyCommand={program} port-forward --stdio=true vmi/testvmi/ns 22",
        "-r",
        "-p",
        "dir",
        "jdoe@vmi.testvmi.ns:/tmp/",
    ]
    result = invoke(kubeconfig, "scp", "--recursive=false", "vm/testvm:f", "local")
    assert result.exit_code == 0
    assert recorded(fake_clients)[3:] == ["envuser@vm.testvm.ctx-ns:f", "local"]
    bad = invoke(kubeconfig, "scp", "a", "b")
    assert (bad.exit_code, bad.stderr) == (
        1,
        'none of the two provided locations seems to be a remote location: "a" to "b"\n',
    )


def test_the_local_client_s_failure_is_reported_as_go_s_exec_does(
    kubeconfig: Path, fake_clients: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EXIT", "255")
    result = invoke(kubeconfig, "ssh", "vmi/testvmi")
    assert (result.exit_code, result.stderr) == (1, "exit status 255\n")
    monkeypatch.setenv("PATH", "/nonexistent")
    result = invoke(kubeconfig, "ssh", "vmi/testvmi")
    assert (result.exit_code, result.stderr) == (1, 'exec: "ssh": executable file not found in $PATH\n')


def test_ssh_target_errors_exit_1(kubeconfig: Path) -> None:
    result = invoke(kubeconfig, "ssh", "@vmi/x")
    assert (result.exit_code, result.stderr) == (1, "expected username before '@'\n")


def test_port_forward_takes_go_style_booleans(kubeconfig: Path) -> None:
    for spelling in ("--stdio=true", "--stdio", "--stdio=1"):
        result = invoke(kubeconfig, "port-forward", spelling, "vmi/vm", "22", "23")
        assert (result.exit_code, result.stderr) == (1, "only one port supported when forwarding to stdout\n")


def test_go_flags_leave_values_and_the_end_of_options_alone() -> None:
    @click.command(cls=GoFlagsCommand)
    @bool_flag("-r", "--recursive", help="")
    @click.option("-c", "--command", default="")
    @click.argument("rest", nargs=-1)
    def command(recursive: bool, command: str, rest: tuple[str, ...]) -> None:
        click.echo(f"{recursive} {command!r} {list(rest)}")

    def run(*args: str) -> str:
        return CliRunner().invoke(command, list(args)).output.strip()

    assert run("-r", "x") == "True '' ['x']"
    assert run("-r=false", "x") == "False '' ['x']"
    assert run("--recursive=F", "-c", "ls") == "False 'ls' []"
    assert run("--", "-r") == "False '' ['-r']"
    assert run("-c", "-r", "x") == "False '-r' ['x']"  # a value that looks like the flag stays a value
    assert run("-c=-r", "-r") == "True '-r' []"  # pflag's "-x=value"

"""hack/bench-import: how fast a DataVolume imports a disk image over HTTP on the running local cluster,
against the same work done directly on the node, as medians over ``--runs`` runs.

A ``--mib`` MiB (default 1 GiB) raw image is made once per run of the benchmark: 1 MiB blocks, about half
random data and half zeros (a fixed seed, so every run imports the same bytes and the importer's sparse
writing counts), written sparse, and its qcow2 conversion. Both are served over HTTP from the host at the
node's address, where pods reach host processes. For each format:

* DataVolume: one with an ``http`` source is created until its phase is ``Succeeded`` (the importer
  container's own run time is printed too when its pod was seen finished), then deleted with its claim;
* direct: the same URL fetched by this process into a file on the CSI driver's storage (zero blocks left
  as holes, as the importer does), then ``qemu-img convert -O raw`` of that file into another there;
* upload: ``virtctl image-upload dv`` of the same file from the host, through the token API, cdi-uploadproxy
  and the claim's upload server, until the command returns (the DataVolume is ``Succeeded`` then).

MiB/s are of the image's virtual size. The figure is the DataVolume's MiB/s over the direct path's (fetch
and convert seconds added). KubeVirt is installed through virt-operator if it is not (and removed again
afterwards), with the ``DataImporter`` gate on for the run; the cdi.kubevirt.io kinds and the ``cdi``
namespace it brings are removed afterwards unless they were there before. Results are saved as JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubevirt.cdi import sizes
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.crds import CDI_CRDS

from . import install
from .benchmain import run_and_save
from .csi.deploy import data_dir
from .handle import Cluster
from .imageserver.server import make_server
from .layout import NODE_IP
from .timing import median, poll_seconds, say
from .up import virtctl

JSON = dict[str, Any]
GATE = "DataImporter"
DATA_VOLUME_CRD = "datavolumes.cdi.kubevirt.io"
CDI_NAMESPACE = "cdi"
CDI_DEPLOYMENT = "cdi-deployment"
UPLOAD_DEPLOYMENTS = ("cdi-apiserver", "cdi-uploadproxy")
UPLOAD_PROXY_SERVICE = "cdi-uploadproxy"
FORMATS = ("raw", "qcow2")
IMAGE_STEM = "bench-import"
CHUNK = 1 << 20
ZEROS = bytes(CHUNK)
SEED = 20250601
DATA_SHARE = 0.5  # of the 1 MiB blocks that hold random data; the rest are zeros


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/bench-import", description=__doc__)
    p.add_argument("--runs", type=int, default=3, help="imports (and direct runs) per format (default 3)")
    p.add_argument("--mib", type=int, default=1024, help="the image's virtual size in MiB (default 1024)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for one DataVolume to succeed")
    p.add_argument("--json", type=Path, default=Path("bench-import.json"), help="where to save the results")
    return p


# The image.


def image_chunks(mib: int, seed: int = SEED) -> Iterator[bytes]:
    """The image's ``mib`` blocks of 1 MiB: random data or zeros, the same for the same seed."""
    rng = random.Random(seed)
    for _ in range(mib):
        yield rng.randbytes(CHUNK) if rng.random() < DATA_SHARE else ZEROS


def write_sparse(chunks: Iterable[bytes], path: Path) -> int:
    """Writes ``chunks`` to a new file at ``path``, leaving all-zero chunks as holes, and syncs it; the
    bytes written (holes included)."""
    size = 0
    with path.open("wb") as out:
        for chunk in chunks:
            if chunk.count(0) == len(chunk):
                out.seek(len(chunk), os.SEEK_CUR)
            else:
                out.write(chunk)
            size += len(chunk)
        out.truncate(size)  # a trailing hole still counts
        out.flush()
        os.fsync(out.fileno())
    return size


def qemu_img_convert(source: Path, dest: Path, source_format: str, dest_format: str) -> None:
    """``qemu-img convert``, write-back cached as the importer's; RuntimeError with its words on failure."""
    argv = ["qemu-img", "convert", "-t", "writeback", "-f", source_format, "-O", dest_format]
    result = subprocess.run([*argv, str(source), str(dest)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"qemu-img convert {source} to {dest_format}: {result.stderr.strip()}")


def make_images(folder: Path, mib: int) -> dict[str, Path]:
    """The raw image and its qcow2 conversion in ``folder``, by format."""
    raw, qcow2 = folder / f"{IMAGE_STEM}.raw", folder / f"{IMAGE_STEM}.qcow2"
    write_sparse(image_chunks(mib), raw)
    qemu_img_convert(raw, qcow2, "raw", "qcow2")
    return {"raw": raw, "qcow2": qcow2}


# Serving and fetching.


@contextmanager
def serving(folder: Path, address: str = NODE_IP) -> Iterator[str]:
    """``folder``'s files over HTTP on ``address`` (a free port) for the length of the block; its base URL."""
    server = make_server(folder, address, 0)
    thread = threading.Thread(target=server.serve_forever, name="bench-import-http", daemon=True)
    thread.start()
    try:
        yield f"http://{address}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def fetch(url: str, dest: Path) -> int:
    """Streams ``url`` into ``dest`` as the importer writes a raw image (zero blocks as holes); bytes."""
    with urllib.request.urlopen(url, timeout=60) as response:
        return write_sparse(iter(lambda: response.read(CHUNK), b""), dest)


# The DataVolume.


def storage_request(image_bytes: int, overhead: str = cdi.DEFAULT_FILESYSTEM_OVERHEAD) -> str:
    """A claim size that holds the image once CDI sets the filesystem overhead aside, in whole MiB (so it
    holds whether or not the controller adds the overhead to the request itself)."""
    needed = sizes.round_up(sizes.required_space(sizes.parse_overhead(overhead), image_bytes))
    return f"{needed // CHUNK}Mi"


def data_volume(name: str, url: str, request: str) -> JSON:
    """An http DataVolume bound at once (the importer pod is its claim's first consumer, not a VM) whose
    importer pod is kept when it succeeds, so that its run time can be read."""
    return {
        "apiVersion": cdi.API_VERSION,
        "kind": "DataVolume",
        "metadata": {
            "name": name,
            "annotations": {
                cdi.Annotation.IMMEDIATE_BINDING: "true",
                cdi.Annotation.POD_RETAIN_AFTER_COMPLETION: "true",
            },
        },
        "spec": {
            "source": {"http": {"url": url}},
            "storage": {"resources": {"requests": {"storage": request}}},
        },
    }


def import_failure(dv: JSON) -> str | None:
    """Why an import will not succeed (Failed, or its importer restarting after an error), else None."""
    status = dv.get("status") or {}
    running: JSON = next((c for c in status.get("conditions") or [] if c.get("type") == "Running"), {})
    if status.get("phase") == cdi.Phase.FAILED or int(status.get("restartCount") or 0) > 0:
        return f"phase {status.get('phase')}: {running.get('reason')}: {running.get('message')}"
    return None


def container_seconds(pod: JSON, container: str = cdi.IMPORTER_CONTAINER) -> float | None:
    """Started to finished of the pod's ``container`` once it finished the import (whole seconds, as the
    kubelet records them), else None: also for a run that only asked for scratch space (the pod is then
    made again with it)."""
    for found in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (found.get("state") or {}).get("terminated") or {}
        if (
            found.get("name") != container
            or terminated.get("exitCode") != 0
            or _asked_for_scratch(terminated)
        ):
            continue
        if terminated.get("startedAt") and terminated.get("finishedAt"):
            started = datetime.datetime.fromisoformat(terminated["startedAt"])
            finished = datetime.datetime.fromisoformat(terminated["finishedAt"])
            return (finished - started).total_seconds()
    return None


def _asked_for_scratch(terminated: JSON) -> bool:
    try:
        message = json.loads(terminated.get("message") or "{}")
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("scratchSpaceRequired") is True


def _dv_and_importer(cluster: Cluster, namespace: str, name: str) -> tuple[JSON, JSON]:
    """The DataVolume and its importer pod (empty when missing), read in one request."""
    pod_name = f"{cdi.IMPORTER_POD_PREFIX}{name}"
    found = cluster.kubectl(
        "get",
        f"dv/{name}",
        f"pod/{pod_name}",
        "-n",
        namespace,
        "-o",
        "json",
        "--ignore-not-found",
        check=False,
    ).stdout
    loaded = json.loads(found) if found.strip() else {}
    items = loaded.get("items", [loaded]) if isinstance(loaded, dict) else []
    by_kind = {item.get("kind"): item for item in items if isinstance(item, dict)}
    return by_kind.get("DataVolume", {}), by_kind.get("Pod", {})


def import_once(
    cluster: Cluster, namespace: str, name: str, url: str, request: str, timeout: float
) -> tuple[float, float | None]:
    """(DataVolume created → Succeeded seconds, the importer container's seconds if seen finished)."""
    seen: dict[str, Any] = {"dv": {}, "importer": None}

    def succeeded() -> bool:
        dv, pod = _dv_and_importer(cluster, namespace, name)
        seen["dv"] = dv
        importer = container_seconds(pod)
        if importer is not None:
            seen["importer"] = importer
        failure = import_failure(dv)
        if failure is not None:
            raise AssertionError(f"DataVolume {name} is failing: {failure}")
        return (dv.get("status") or {}).get("phase") == cdi.Phase.SUCCEEDED

    began = time.monotonic()
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(data_volume(name, url, request)))
    try:
        poll_seconds(f"DataVolume {name} Succeeded", succeeded, timeout, 0.5)
    except AssertionError as error:
        raise AssertionError(f"{error}; last status: {json.dumps(seen['dv'].get('status'))}") from error
    took = time.monotonic() - began
    # The retained importer pod still names the claim, whose protection would otherwise hold it for good.
    cluster.kubectl("delete", "pod", f"importer-{name}", "-n", namespace, "--ignore-not-found", "--wait=true")
    _delete_data_volume(cluster, namespace, name)
    return took, seen["importer"]


def _delete_data_volume(cluster: Cluster, namespace: str, name: str) -> None:
    cluster.kubectl("delete", "dv", name, "-n", namespace, "--wait=true", "--timeout=180s")
    poll_seconds(f"claim {name} gone", lambda: cluster.find("pvc", name, namespace) is None, 180, 0.5)


def upload_proxy_url(cluster: Cluster) -> str:
    """The upload proxy's Service address, which the host reaches (kube-proxy runs on it)."""
    service = cluster.find("service", UPLOAD_PROXY_SERVICE, CDI_NAMESPACE) or {}
    return f"https://{service['spec']['clusterIP']}"


def upload_once(
    cluster: Cluster, namespace: str, name: str, image: Path, request: str, proxy: str, timeout: float
) -> float:
    """Seconds of ``virtctl image-upload dv`` of ``image`` into a new DataVolume, which is then deleted."""
    began = time.monotonic()
    done = virtctl(
        cluster,
        "image-upload", "dv", name, "-n", namespace, f"--size={request}", f"--image-path={image}",
        f"--uploadproxy-url={proxy}", "--insecure", "--force-bind", f"--wait-secs={int(timeout)}",
        timeout=2 * timeout,
    )  # fmt: skip
    took = time.monotonic() - began
    if done.returncode != 0:
        raise AssertionError(f"virtctl image-upload {name} failed: {done.stdout}{done.stderr}")
    phase = ((cluster.find("dv", name, namespace) or {}).get("status") or {}).get("phase")
    if phase != cdi.Phase.SUCCEEDED:
        raise AssertionError(f"DataVolume {name} is {phase} after virtctl image-upload returned")
    _delete_data_volume(cluster, namespace, name)
    return took


# The direct path on the node.


def direct_once(url: str, image_format: str, folder: Path) -> tuple[float, float]:
    """(seconds to fetch ``url`` into ``folder``, seconds to convert that copy to raw there)."""
    fetched = folder / f".bench-import-fetched-{os.getpid()}"
    converted = folder / f".bench-import-converted-{os.getpid()}"
    try:
        began = time.monotonic()
        fetch(url, fetched)
        fetch_seconds = time.monotonic() - began
        began = time.monotonic()
        qemu_img_convert(fetched, converted, image_format, "raw")
        return fetch_seconds, time.monotonic() - began
    finally:
        fetched.unlink(missing_ok=True)
        converted.unlink(missing_ok=True)


# The figures.


def mib_per_second(mib: int, seconds: float) -> float:
    return round(mib / max(seconds, 1e-3), 1)


def summary(
    mib: int,
    dv: list[float],
    importer: list[float],
    fetched: list[float],
    converted: list[float],
    uploaded: list[float],
) -> JSON:
    """Medians and MiB/s of one format's runs; ``ratio`` is the DataVolume's MiB/s over the direct path's
    (its fetch and convert medians added)."""
    dv_seconds, fetch_seconds, convert_seconds = median(dv), median(fetched), median(converted)
    upload_seconds = median(uploaded) if uploaded else None
    direct_seconds = round(fetch_seconds + convert_seconds, 2)
    return {
        "runs": len(dv),
        "datavolume_seconds": dv_seconds,
        "datavolume_mib_s": mib_per_second(mib, dv_seconds),
        "importer_container_seconds": median(importer) if importer else None,
        "fetch_seconds": fetch_seconds,
        "fetch_mib_s": mib_per_second(mib, fetch_seconds),
        "convert_seconds": convert_seconds,
        "convert_mib_s": mib_per_second(mib, convert_seconds),
        "direct_seconds": direct_seconds,
        "direct_mib_s": mib_per_second(mib, direct_seconds),
        "ratio": round(direct_seconds / max(dv_seconds, 1e-3), 3),
        "upload_seconds": upload_seconds,
        "upload_mib_s": None if upload_seconds is None else mib_per_second(mib, upload_seconds),
    }


COLUMNS = (
    ("format", "format"),
    ("DV s", "datavolume_seconds"),
    ("DV MiB/s", "datavolume_mib_s"),
    ("importer s", "importer_container_seconds"),
    ("fetch MiB/s", "fetch_mib_s"),
    ("convert MiB/s", "convert_mib_s"),
    ("direct MiB/s", "direct_mib_s"),
    ("DV/direct", "ratio"),
    ("upload s", "upload_seconds"),
    ("upload MiB/s", "upload_mib_s"),
)


def table(results: dict[str, JSON]) -> str:
    """One row per format, the medians' columns aligned."""
    rows = [[title for title, _ in COLUMNS]]
    for image_format, figures in results.items():
        values = {"format": image_format, **figures}
        rows.append(["-" if values[key] is None else str(values[key]) for _, key in COLUMNS])
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows
    )


# The run.


@contextmanager
def importer_enabled(cluster: Cluster) -> Iterator[None]:
    """The DataImporter gate on and cdi-deployment available for the length of the block; afterwards the
    cdi.kubevirt.io kinds and the cdi namespace removed (virt-operator leaves them when the gate goes
    off) unless the DataVolume kind was served before."""

    def served() -> bool:
        return cluster.kubectl("get", "crd", DATA_VOLUME_CRD, check=False).returncode == 0

    served_before = served()
    try:
        with install.feature_gates(cluster, GATE):
            poll_seconds("the DataVolume kind served", served, 120, 0.5)
            for deployment in (CDI_DEPLOYMENT, *UPLOAD_DEPLOYMENTS):
                cluster.rollout(CDI_NAMESPACE, deployment, 180)
            yield
    finally:
        if not served_before:
            crds = [facts.name for facts in CDI_CRDS.values()]
            cluster.kubectl("delete", "crd", *crds, "--ignore-not-found", "--wait=true", check=False)
            cluster.kubectl(
                "delete", "namespace", CDI_NAMESPACE, "--ignore-not-found", "--wait=true", check=False
            )


def measure_format(
    cluster: Cluster, namespace: str, image_format: str, image: Path, url: str, args: argparse.Namespace
) -> JSON:
    request = storage_request(args.mib * CHUNK)
    storage = data_dir(cluster.layout, cluster.layout.node(1))  # the CSI driver's, beside its volumes
    proxy = upload_proxy_url(cluster)
    dv, importer, fetched, converted, uploaded = [], [], [], [], []
    for index in range(args.runs):
        took, container = import_once(
            cluster, namespace, f"{image_format}-{index}", url, request, args.timeout
        )
        dv.append(took)
        if container is not None:
            importer.append(container)
        fetch_seconds, convert_seconds = direct_once(url, image_format, storage)
        fetched.append(fetch_seconds)
        converted.append(convert_seconds)
        upload = upload_once(
            cluster, namespace, f"up-{image_format}-{index}", image, request, proxy, args.timeout
        )
        uploaded.append(upload)
        say(
            f"{image_format} run {index + 1}: DataVolume → Succeeded {took:.1f} s"
            f" (importer container {'-' if container is None else f'{container:.0f}'} s); direct fetch "
            f"{fetch_seconds:.1f} s + qemu-img convert {convert_seconds:.1f} s; image-upload {upload:.1f} s"
        )
    return summary(args.mib, dv, importer, fetched, converted, uploaded)


def run(cluster: Cluster, args: argparse.Namespace) -> JSON:
    namespace = f"bench-import-{os.getpid() % 100000}"
    with tempfile.TemporaryDirectory(prefix="bench-import-", dir=cluster.layout.run) as folder:
        began = time.monotonic()
        images = make_images(Path(folder), args.mib)
        say(
            f"made a {args.mib} MiB image (about {DATA_SHARE:.0%} random data) and its qcow2 "
            f"({images['qcow2'].stat().st_size >> 20} MiB) in {time.monotonic() - began:.1f} s"
        )
        cluster.fresh_namespace(namespace)
        try:
            with serving(Path(folder)) as base:
                say(f"serving them at {base}")
                results = {
                    f: measure_format(cluster, namespace, f, images[f], f"{base}/{images[f].name}", args)
                    for f in FORMATS
                }
        finally:
            cluster.kubectl("delete", "dv", "--all", "-n", namespace, "--wait=true", check=False)
            cluster.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=180s", check=False)
    say(f"{args.mib} MiB image, median of {args.runs} (MiB/s of the virtual size):\n{table(results)}")
    return {"image_mib": args.mib, "runs": args.runs, **results}


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.runs < 1 or args.mib < 1:
        print("hack/bench-import: --runs and --mib must be at least 1", file=sys.stderr)
        return 2

    def measure(cluster: Cluster) -> object:
        with install.present(cluster, say), importer_enabled(cluster):
            return run(cluster, args)

    # OSError too: the images are made and served on the host.
    return run_and_save("hack/bench-import", args.json, measure, (RuntimeError, AssertionError, OSError))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

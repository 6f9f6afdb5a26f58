"""The install strategy: every object of KubeVirt's §7.1 that this project has, named, labelled and
annotated as KubeVirt's operator makes them, and shaped by the KubeVirt CR."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kubevirt.virt_operator.resource.config import (
    InstallConfig,
    InvalidInstallConfigError,
    install_config,
    split_image,
)
from kubevirt.virt_operator.resource.strategy import install_strategy
from kubevirt_api.core.v1.kubevirt import KubeVirt

JSON = dict[str, Any]
OPERATOR_IMAGE = "quay.io/kubevirt/virt-operator:v1.6.6"


def _kv(spec: JSON | None = None, generation: int = 3) -> KubeVirt:
    return KubeVirt.model_validate(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt", "namespace": "kubevirt", "generation": generation},
            "spec": spec or {},
        }
    )


def _strategy(spec: JSON | None = None, ca: bytes | None = b"CA") -> dict[tuple[str, str], JSON]:
    config = install_config(_kv(spec), namespace="kubevirt", operator_image=OPERATOR_IMAGE)
    return {(o["kind"], o["metadata"]["name"]): o for o in install_strategy(config, ca)}


def test_every_component_object_is_there_with_kubevirts_names() -> None:
    objects = _strategy()
    expected = {
        ("ServiceAccount", "kubevirt-apiserver"),
        ("ServiceAccount", "kubevirt-controller"),
        ("ServiceAccount", "kubevirt-handler"),
        ("ClusterRole", "kubevirt.io:admin"),
        ("ClusterRole", "kubevirt.io:edit"),
        ("ClusterRole", "kubevirt.io:view"),
        ("ClusterRole", "kubevirt.io:migrate"),
        ("ClusterRole", "kubevirt.io:default"),
        ("ClusterRoleBinding", "kubevirt-apiserver-auth-delegator"),
        ("Service", "virt-api"),
        ("Service", "kubevirt-prometheus-metrics"),
        ("Deployment", "virt-api"),
        ("Deployment", "virt-controller"),
        ("PodDisruptionBudget", "virt-api-pdb"),
        ("PodDisruptionBudget", "virt-controller-pdb"),
        ("DaemonSet", "virt-handler"),
        ("APIService", "v1.subresources.kubevirt.io"),
        ("APIService", "v1alpha3.subresources.kubevirt.io"),
        ("ValidatingWebhookConfiguration", "virt-api-validator"),
        ("MutatingWebhookConfiguration", "virt-api-mutator"),
        ("CustomResourceDefinition", "virtualmachineinstances.kubevirt.io"),
        ("CustomResourceDefinition", "virtualmachines.kubevirt.io"),
    }
    assert expected <= set(objects)
    # The KubeVirt CRD belongs to the operator's own manifest: uninstalling must not delete it.
    assert ("CustomResourceDefinition", "kubevirts.kubevirt.io") not in objects


def test_every_object_is_stamped_with_the_operator_labels_and_strategy_annotations() -> None:
    config = install_config(_kv(), namespace="kubevirt", operator_image=OPERATOR_IMAGE)
    for obj in install_strategy(config, b"CA"):
        metadata = obj["metadata"]
        assert metadata["labels"]["app.kubernetes.io/managed-by"] == "virt-operator", obj["kind"]
        assert metadata["labels"]["app.kubernetes.io/component"] == "kubevirt"
        annotations = metadata["annotations"]
        assert annotations["kubevirt.io/install-strategy-version"] == "v1.6.6"
        assert annotations["kubevirt.io/install-strategy-registry"] == "quay.io/kubevirt"
        assert annotations["kubevirt.io/install-strategy-identifier"] == config.deployment_id
        assert annotations["kubevirt.io/generation"] == "3"


def test_aggregated_roles_aggregate_into_the_kubernetes_user_roles() -> None:
    objects = _strategy()
    for verb in ("admin", "edit", "view"):
        labels = objects["ClusterRole", f"kubevirt.io:{verb}"]["metadata"]["labels"]
        assert labels[f"rbac.authorization.k8s.io/aggregate-to-{verb}"] == "true"
    migrate = objects["ClusterRole", "kubevirt.io:migrate"]
    assert not any(
        key.startswith("rbac.authorization.k8s.io/aggregate") for key in migrate["metadata"]["labels"]
    )
    assert {
        "apiGroups": ["subresources.kubevirt.io"],
        "resources": ["virtualmachines/migrate"],
        "verbs": ["update"],
    } in (migrate["rules"])
    edit_rules = objects["ClusterRole", "kubevirt.io:edit"]["rules"]
    console = next(r for r in edit_rules if "virtualmachineinstances/console" in r["resources"])
    assert console["apiGroups"] == ["subresources.kubevirt.io"]


def test_deployments_run_two_replicas_of_the_configured_images_with_budgets() -> None:
    objects = _strategy({"imageRegistry": "registry.local/kv", "imageTag": "b"})
    api = objects["Deployment", "virt-api"]
    controller = objects["Deployment", "virt-controller"]
    assert api["spec"]["replicas"] == controller["spec"]["replicas"] == 2
    assert api["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/kv/virt-api:b"
    args = controller["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--launcher-image") + 1] == "registry.local/kv/virt-launcher:b"
    handler = objects["DaemonSet", "virt-handler"]
    assert handler["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/kv/virt-handler:b"
    assert objects["PodDisruptionBudget", "virt-api-pdb"]["spec"]["minAvailable"] == 1
    assert objects["PodDisruptionBudget", "virt-api-pdb"]["spec"]["selector"] == {
        "matchLabels": {"kubevirt.io": "virt-api"}
    }


def test_the_handler_daemonset_labels_nodes_from_the_launcher_image_and_mounts_each_volume_once() -> None:
    objects = _strategy(
        {"imageTag": "b", "configuration": {"developerConfiguration": {"useEmulation": True}}}
    )
    pod = objects["DaemonSet", "virt-handler"]["spec"]["template"]["spec"]
    (labeller,) = pod["initContainers"]
    assert labeller["image"] == "quay.io/kubevirt/virt-launcher:b"
    assert "--force-emulation" in labeller["command"]
    names = [volume["name"] for volume in pod["volumes"]]
    assert len(names) == len(set(names))
    assert "kubevirt-virt-handler-server-certs" in names


def test_a_single_infra_replica_gets_no_disruption_budget() -> None:
    objects = _strategy({"infra": {"replicas": 1}})
    assert objects["Deployment", "virt-api"]["spec"]["replicas"] == 1
    assert ("PodDisruptionBudget", "virt-api-pdb") not in objects


def test_webhooks_and_apiservices_carry_the_ca_bundle_and_point_at_virt_api() -> None:
    objects = _strategy(ca=b"PEM")
    encoded = base64.b64encode(b"PEM").decode()
    validator = objects["ValidatingWebhookConfiguration", "virt-api-validator"]
    paths = set()
    for hook in validator["webhooks"]:
        assert hook["clientConfig"]["caBundle"] == encoded
        assert hook["clientConfig"]["service"]["name"] == "virt-api"
        assert hook["clientConfig"]["service"]["namespace"] == "kubevirt"
        assert hook["failurePolicy"] == "Fail"
        assert hook["timeoutSeconds"] == 10
        paths.add(hook["clientConfig"]["service"]["path"])
    assert "/virtualmachineinstances-validate-create" in paths
    assert "/pod-eviction-validate" in paths
    mutator = objects["MutatingWebhookConfiguration", "virt-api-mutator"]
    assert [h["name"] for h in mutator["webhooks"]] == [
        "virtualmachines-mutator.kubevirt.io",
        "virtualmachineinstances-mutator.kubevirt.io",
        "migrations-mutator.kubevirt.io",
        "virtualmachineclones-mutator.kubevirt.io",
    ]
    for version in ("v1", "v1alpha3"):
        assert objects["APIService", f"{version}.subresources.kubevirt.io"]["spec"]["caBundle"] == encoded


def test_verbosity_reaches_the_component_arguments() -> None:
    spec = {"configuration": {"developerConfiguration": {"logVerbosity": {"virtAPI": 5, "virtHandler": 4}}}}
    objects = _strategy(spec)
    api_args = objects["Deployment", "virt-api"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert api_args[api_args.index("-v") + 1] == "5"
    handler_command = objects["DaemonSet", "virt-handler"]["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    assert handler_command[handler_command.index("-v") + 1] == "4"


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        ("json", [{"op": "replace", "path": "/spec/replicas", "value": 3}]),
        ("merge", {"spec": {"replicas": 3}}),
        ("strategic", {"spec": {"replicas": 3}}),
    ],
)
def test_customize_components_patches_apply_and_are_recorded(patch_type: str, patch: Any) -> None:
    spec = {
        "customizeComponents": {
            "patches": [
                {
                    "resourceName": "virt-api",
                    "resourceType": "Deployment",
                    "patch": json.dumps(patch),
                    "type": patch_type,
                }
            ]
        }
    }
    objects = _strategy(spec)
    api = objects["Deployment", "virt-api"]
    assert api["spec"]["replicas"] == 3
    assert api["metadata"]["annotations"]["kubevirt.io/customizer-identifier"]
    assert objects["Deployment", "virt-controller"]["spec"]["replicas"] == 2
    # Every customizable object carries the customizations' hash, so a change of them shows everywhere.
    digest = api["metadata"]["annotations"]["kubevirt.io/customizer-identifier"]
    assert (
        objects["Service", "virt-api"]["metadata"]["annotations"]["kubevirt.io/customizer-identifier"]
        == digest
    )
    assert (
        digest
        != _strategy()["Deployment", "virt-api"]["metadata"]["annotations"][
            "kubevirt.io/customizer-identifier"
        ]
    )
    assert (
        "kubevirt.io/customizer-identifier"
        not in objects["ClusterRole", "kubevirt.io:view"]["metadata"]["annotations"]
    )


def test_a_patch_may_address_every_object_of_a_kind_without_regard_to_case() -> None:
    patch = {"metadata": {"labels": {"team": "virt"}}}
    spec = {
        "customizeComponents": {
            "patches": [
                {
                    "resourceName": "*",
                    "resourceType": "deployment",
                    "patch": json.dumps(patch),
                    "type": "merge",
                }
            ]
        }
    }
    objects = _strategy(spec)
    assert objects["Deployment", "virt-api"]["metadata"]["labels"]["team"] == "virt"
    assert objects["Deployment", "virt-controller"]["metadata"]["labels"]["team"] == "virt"
    assert "team" not in objects["DaemonSet", "virt-handler"]["metadata"]["labels"]


def test_flags_extend_the_component_command_and_keep_its_arguments() -> None:
    objects = _strategy({"customizeComponents": {"flags": {"handler": {"Max-Devices": "20", "debug": ""}}}})
    (container,) = objects["DaemonSet", "virt-handler"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["virt-handler", "--debug", "--max-devices", "20"]
    assert "--hostname-override" in container["args"]
    (api,) = objects["Deployment", "virt-api"]["spec"]["template"]["spec"]["containers"]
    assert api["command"] == ["virt-api"]


def test_strategic_patch_merges_containers_by_name() -> None:
    patch = {
        "spec": {
            "template": {"spec": {"containers": [{"name": "virt-api", "env": [{"name": "X", "value": "1"}]}]}}
        }
    }
    spec = {
        "customizeComponents": {
            "patches": [
                {
                    "resourceName": "virt-api",
                    "resourceType": "Deployment",
                    "patch": json.dumps(patch),
                    "type": "strategic",
                }
            ]
        }
    }
    (container,) = _strategy(spec)["Deployment", "virt-api"]["spec"]["template"]["spec"]["containers"]
    assert container["image"].endswith("/virt-api:v1.6.6")  # kept
    assert container["env"] == [{"name": "X", "value": "1"}]


def test_a_bad_patch_is_refused_with_its_field_path() -> None:
    spec = {
        "customizeComponents": {
            "patches": [
                {
                    "resourceName": "virt-api",
                    "resourceType": "Deployment",
                    "patch": "{not json",
                    "type": "json",
                }
            ]
        }
    }
    with pytest.raises(InvalidInstallConfigError, match=r"spec\.customizeComponents\.patches\[0\]\.patch"):
        _strategy(spec)


def test_the_deployment_id_follows_what_shapes_the_objects_not_the_generation() -> None:
    a = install_config(_kv(generation=1), namespace="kubevirt", operator_image=OPERATOR_IMAGE)
    b = install_config(_kv(generation=9), namespace="kubevirt", operator_image=OPERATOR_IMAGE)
    c = install_config(_kv({"imageTag": "other"}), namespace="kubevirt", operator_image=OPERATOR_IMAGE)
    assert a.deployment_id == b.deployment_id != c.deployment_id


def test_images_split_into_registry_and_tag() -> None:
    assert split_image("quay.io/kubevirt/virt-operator:v1.6.6") == ("quay.io/kubevirt", "v1.6.6")
    assert split_image("localhost:5000/kv/virt-operator") == ("localhost:5000/kv", "latest")
    assert InstallConfig(namespace="n", registry="r/x", tag="t").image("virt-api") == "r/x/virt-api:t"


def test_virt_handler_runs_on_linux_nodes_unless_workloads_node_placement_says_more() -> None:
    pod = _strategy()[("DaemonSet", "virt-handler")]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert "affinity" not in pod
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    placement = {
        "nodeSelector": {"kubevirt.test/handler": "yes"},
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        },
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "vms", "effect": "NoSchedule"}],
    }
    strategy = _strategy({"workloads": {"nodePlacement": placement}})
    pod = strategy[("DaemonSet", "virt-handler")]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubevirt.test/handler": "yes", "kubernetes.io/os": "linux"}
    assert pod["affinity"] == placement["affinity"]
    assert pod["tolerations"] == [{"operator": "Exists"}, placement["tolerations"][0]]
    # The workloads placement is virt-handler's alone.
    for name in ("virt-api", "virt-controller"):
        deployment = strategy[("Deployment", name)]["spec"]["template"]["spec"]
        assert "kubevirt.test/handler" not in (deployment.get("nodeSelector") or {})


def test_a_node_placement_may_choose_another_os_but_not_clobber_the_templates_own_keys() -> None:
    from kubevirt.virt_operator.resource.placement import inject_placement

    pod: JSON = {"nodeSelector": {"kubevirt.io/schedulable": "true"}, "affinity": {"nodeAffinity": {}}}
    inject_placement(
        {
            "nodeSelector": {"kubernetes.io/os": "other", "kubevirt.io/schedulable": "false"},
            "affinity": {
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}
            },
        },
        pod,
    )
    assert pod["nodeSelector"] == {"kubevirt.io/schedulable": "true", "kubernetes.io/os": "other"}
    assert pod["affinity"] == {
        "nodeAffinity": {},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]},
    }


VM_EXPORT = {"configuration": {"developerConfiguration": {"featureGates": ["VMExport"]}}}
EXPORTPROXY_ALWAYS = {
    ("ServiceAccount", "kubevirt-exportproxy"),
    ("ClusterRole", "kubevirt-exportproxy"),
    ("ClusterRoleBinding", "kubevirt-exportproxy"),
    ("Role", "kubevirt-exportproxy"),
    ("RoleBinding", "kubevirt-exportproxy"),
    ("Service", "virt-exportproxy"),
}


def test_the_export_proxy_runs_only_under_the_vmexport_gate_its_service_and_rbac_always_exist() -> None:
    without = _strategy()
    assert set(without) >= EXPORTPROXY_ALWAYS
    assert ("Deployment", "virt-exportproxy") not in without
    with_gate = _strategy(VM_EXPORT)
    assert EXPORTPROXY_ALWAYS | {
        ("Deployment", "virt-exportproxy"),
        ("PodDisruptionBudget", "virt-exportproxy-pdb"),
    } <= set(with_gate)
    # Only the workload differs: the gate is not part of the install's identity (KubeVirt's neither).
    assert without.keys() | {
        ("Deployment", "virt-exportproxy"),
        ("PodDisruptionBudget", "virt-exportproxy-pdb"),
    } == set(with_gate)
    ids = {
        install_config(_kv(spec), namespace="kubevirt", operator_image=OPERATOR_IMAGE).deployment_id
        for spec in (None, VM_EXPORT)
    }
    assert len(ids) == 1


def test_the_export_proxy_deployment_is_kubevirts() -> None:
    objects = _strategy({**VM_EXPORT, "imageRegistry": "registry.local/kv", "imageTag": "b"})
    deployment = objects["Deployment", "virt-exportproxy"]
    assert deployment["metadata"]["labels"]["kubevirt.io"] == "virt-exportproxy"
    assert deployment["spec"]["selector"] == {"matchLabels": {"kubevirt.io": "virt-exportproxy"}}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kubevirt-exportproxy"
    assert pod["securityContext"]["runAsNonRoot"] is True
    # As in KubeVirt, spread away from virt-api's pods.
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["labelSelector"]["matchExpressions"][0]["values"] == ["virt-api"]
    (container,) = pod["containers"]
    assert container["name"] == "exportproxy"
    assert container["image"] == "registry.local/kv/virt-exportproxy:b"
    assert container["command"] == ["virt-exportproxy", "--port", "8443", "-v", "2"]
    assert "args" not in container
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
        ("exportproxy", 8443),
        ("metrics", 8443),
    ]
    assert container["readinessProbe"] == {
        "httpGet": {"scheme": "HTTPS", "port": 8443, "path": "/healthz"},
        "initialDelaySeconds": 15,
        "periodSeconds": 10,
    }
    assert container["resources"] == {"requests": {"cpu": "5m", "memory": "150Mi"}}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["kubevirt-exportproxy-certs"] == "/etc/virt-exportproxy/certificates"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["kubevirt-exportproxy-certs"]["secret"]["secretName"] == "kubevirt-exportproxy-certs"
    service = objects["Service", "virt-exportproxy"]
    assert service["spec"]["selector"] == {"kubevirt.io": "virt-exportproxy"}
    assert service["spec"]["ports"] == [{"port": 443, "targetPort": 8443, "protocol": "TCP"}]


def _rules(obj: JSON) -> list[tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]]:
    return [
        (
            frozenset(rule["apiGroups"]),
            frozenset(rule["resources"]),
            frozenset(rule["verbs"]),
            frozenset(rule.get("resourceNames", ())),
        )
        for rule in obj["rules"]
    ]


def _grants(obj: JSON, group: str, resource: str, verb: str) -> bool:
    """Whether a rule without resource names grants ``verb`` on ``resource`` (wildcards count)."""
    return any(
        group in groups and (resources & {resource, "*"}) and (verbs & {verb, "*"}) and not names
        for groups, resources, verbs, names in _rules(obj)
    )


def test_the_export_proxy_reads_exports_the_kubevirt_cr_and_only_the_export_ca() -> None:
    objects = _strategy()
    cluster_role = objects["ClusterRole", "kubevirt-exportproxy"]
    assert _rules(cluster_role) == [
        (
            frozenset({"export.kubevirt.io"}),
            frozenset({"virtualmachineexports"}),
            frozenset({"get", "list", "watch"}),
            frozenset(),
        ),
        (frozenset({"kubevirt.io"}), frozenset({"kubevirts"}), frozenset({"list", "watch"}), frozenset()),
    ]
    assert _rules(objects["Role", "kubevirt-exportproxy"]) == [
        (
            frozenset({""}),
            frozenset({"configmaps"}),
            frozenset({"get", "list", "watch"}),
            frozenset({"kubevirt-export-ca"}),
        )
    ]
    binding = objects["ClusterRoleBinding", "kubevirt-exportproxy"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kubevirt-exportproxy", "namespace": "kubevirt"}
    ]


@pytest.mark.parametrize(
    ("kind", "group", "resource", "verbs"),
    [
        # The export controller's objects: exporter pods, their Services and certificate Secrets, the
        # ConfigMaps and PVCs they mount (PVCs are also created from snapshot sources).
        ("ClusterRole", "", "pods", ("get", "list", "watch", "create", "delete")),
        ("ClusterRole", "", "services", ("get", "list", "watch", "create", "delete")),
        ("ClusterRole", "", "configmaps", ("get", "list", "watch", "create", "delete")),
        ("ClusterRole", "", "secrets", ("create",)),
        ("ClusterRole", "", "persistentvolumeclaims", ("get", "list", "watch", "create", "update", "delete")),
        ("ClusterRole", "export.kubevirt.io", "virtualmachineexports/status", ("update", "patch")),
        ("ClusterRole", "export.kubevirt.io", "virtualmachineexports/finalizers", ("update",)),
        ("ClusterRole", "snapshot.kubevirt.io", "virtualmachinesnapshotcontents", ("get", "list", "watch")),
        ("ClusterRole", "cdi.kubevirt.io", "datavolumes", ("get", "list", "watch")),
        # Where the external links come from: the proxy's Ingress or Route and its certificate.
        ("Role", "networking.k8s.io", "ingresses", ("get", "list", "watch")),
        ("Role", "route.openshift.io", "routes", ("get", "list", "watch")),
        ("Role", "", "secrets", ("get", "list", "watch")),
    ],
)
def test_virt_controller_may_do_what_the_export_controller_does(
    kind: str, group: str, resource: str, verbs: tuple[str, ...]
) -> None:
    role = _strategy()[kind, "kubevirt-controller"]
    for verb in verbs:
        assert _grants(role, group, resource, verb), (kind, group, resource, verb)


def test_every_pod_the_metrics_service_selects_declares_the_port_it_targets() -> None:
    """Prometheus finds a component through the metrics Service's endpoints, which list a pod only with
    the named port the Service targets: a component without it is never scraped."""
    objects = _strategy()
    service = objects[("Service", "kubevirt-prometheus-metrics")]
    selector = service["spec"]["selector"]
    target = service["spec"]["ports"][0]["targetPort"]
    selected = {
        name: workload["spec"]["template"]["spec"]
        for (kind, name), workload in objects.items()
        if kind in ("Deployment", "DaemonSet")
        and selector.items() <= workload["spec"]["template"]["metadata"]["labels"].items()
    }
    assert {"virt-api", "virt-controller", "virt-handler"} <= set(selected)
    for name, pod in selected.items():
        ports = {(p["name"], p["containerPort"]) for c in pod["containers"] for p in c.get("ports", [])}
        assert (target, 8443) in ports, name


def test_virt_handler_is_probed_as_kubevirt_probes_it() -> None:
    """A virt-handler that stops answering /healthz is restarted (3 misses, 45 s apart) and is not ready
    until it answers, as in KubeVirt's DaemonSet."""
    [container] = _strategy()[("DaemonSet", "virt-handler")]["spec"]["template"]["spec"]["containers"]
    get = {"httpGet": {"scheme": "HTTPS", "port": 8443, "path": "/healthz"}}
    assert container["livenessProbe"] == {
        **get,
        "failureThreshold": 3,
        "initialDelaySeconds": 15,
        "timeoutSeconds": 10,
        "periodSeconds": 45,
    }
    assert container["readinessProbe"] == {
        **get,
        "initialDelaySeconds": 15,
        "timeoutSeconds": 10,
        "periodSeconds": 20,
    }

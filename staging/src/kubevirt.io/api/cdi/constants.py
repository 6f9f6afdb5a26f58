"""CDI's wire names (containerized-data-importer v1.63, the API KubeVirt v1.6 builds against): the
DataVolume phases and condition types, the PVC annotations its controllers and worker pods talk through,
the labels, event reasons and worker environment. One home, read by virt-controller and by the project's
own DataVolume importer alike."""

from __future__ import annotations

from typing import Final

GROUP: Final = "cdi.kubevirt.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
UPLOAD_GROUP: Final = "upload.cdi.kubevirt.io"

# The one CDIConfig there is, and CDI's default install namespace (KubeVirt's --cdi-namespace default).
CDI_CONFIG_NAME: Final = "config"
CDI_NAMESPACE: Final = "cdi"


class Phase:
    """DataVolume ``status.phase`` values."""

    UNSET: Final = ""
    PENDING: Final = "Pending"
    PVC_BOUND: Final = "PVCBound"
    IMPORT_SCHEDULED: Final = "ImportScheduled"
    IMPORT_IN_PROGRESS: Final = "ImportInProgress"
    CLONE_SCHEDULED: Final = "CloneScheduled"
    CLONE_IN_PROGRESS: Final = "CloneInProgress"
    UPLOAD_SCHEDULED: Final = "UploadScheduled"
    UPLOAD_READY: Final = "UploadReady"
    WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
    PENDING_POPULATION: Final = "PendingPopulation"
    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    UNKNOWN: Final = "Unknown"


class ConditionType:
    """DataVolume ``status.conditions[].type`` values."""

    BOUND: Final = "Bound"
    READY: Final = "Ready"
    RUNNING: Final = "Running"


# status.progress before anything is known, and once a transfer finished.
PROGRESS_UNKNOWN: Final = "N/A"
PROGRESS_DONE: Final = "100.0%"

CONTENT_TYPE_KUBEVIRT: Final = "kubevirt"
CONTENT_TYPE_ARCHIVE: Final = "archive"

# The values of the import-source annotation (and of the importer's IMPORTER_SOURCE).
SOURCE_HTTP: Final = "http"
SOURCE_S3: Final = "s3"
SOURCE_GCS: Final = "gcs"
SOURCE_REGISTRY: Final = "registry"
SOURCE_IMAGEIO: Final = "imageio"
SOURCE_VDDK: Final = "vddk"
SOURCE_NONE: Final = "none"  # a blank image

REGISTRY_PULL_POD: Final = "pod"
REGISTRY_PULL_NODE: Final = "node"

_A: Final = "cdi.kubevirt.io/"


class Annotation:
    """Annotations on DataVolumes and their PVCs."""

    # Import (controller → importer pod, through the PVC).
    IMPORT_ENDPOINT: Final = _A + "storage.import.endpoint"
    IMPORT_SOURCE: Final = _A + "storage.import.source"
    IMPORT_SECRET: Final = _A + "storage.import.secretName"
    IMPORT_CERT_CONFIG_MAP: Final = _A + "storage.import.certConfigMap"
    IMPORT_EXTRA_HEADERS_PREFIX: Final = _A + "storage.import.extraHeaders."
    IMPORT_SECRET_EXTRA_HEADERS_PREFIX: Final = _A + "storage.import.secretExtraHeaders."
    IMPORT_POD_NAME: Final = _A + "storage.import.importPodName"
    IMPORT_REGISTRY_METHOD: Final = _A + "storage.import.registryImportMethod"
    IMPORT_REGISTRY_IMAGE_STREAM: Final = _A + "storage.import.registryImageStream"
    REQUIRES_SCRATCH: Final = _A + "storage.import.requiresScratch"
    REQUIRES_DIRECT_IO: Final = _A + "storage.import.requiresDirectIo"
    CONTENT_TYPE: Final = _A + "storage.contentType"
    PREALLOCATION_REQUESTED: Final = _A + "storage.preallocation.requested"
    # Worker pod state, copied onto the PVC by the controller.
    POD_PHASE: Final = _A + "storage.pod.phase"
    POD_READY: Final = _A + "storage.pod.ready"
    POD_RESTARTS: Final = _A + "storage.pod.restarts"
    POD_SCHEDULABLE: Final = _A + "storage.pod.schedulable"
    POD_RETAIN_AFTER_COMPLETION: Final = _A + "storage.pod.retainAfterCompletion"
    POD_PRIORITY_CLASS: Final = _A + "storage.pod.priorityclassname"
    RUNNING_CONDITION: Final = _A + "storage.condition.running"
    RUNNING_CONDITION_MESSAGE: Final = _A + "storage.condition.running.message"
    RUNNING_CONDITION_REASON: Final = _A + "storage.condition.running.reason"
    BOUND_CONDITION: Final = _A + "storage.condition.bound"
    BOUND_CONDITION_MESSAGE: Final = _A + "storage.condition.bound.message"
    BOUND_CONDITION_REASON: Final = _A + "storage.condition.bound.reason"
    # Upload.
    UPLOAD_TARGET: Final = _A + "storage.upload.target"
    UPLOAD_POD_NAME: Final = _A + "storage.uploadPodName"
    # Binding, population, ownership.
    IMMEDIATE_BINDING: Final = _A + "storage.bind.immediate.requested"
    USE_POPULATOR: Final = _A + "storage.usePopulator"
    POPULATED_FOR: Final = _A + "storage.populatedFor"
    PRE_POPULATED: Final = _A + "storage.prePopulated"
    CHECK_STATIC_VOLUME: Final = _A + "storage.checkStaticVolume"
    CREATED_FOR_DATA_VOLUME: Final = _A + "createdForDataVolume"
    ALLOW_CLAIM_ADOPTION: Final = _A + "allowClaimAdoption"
    DELETE_AFTER_COMPLETION: Final = _A + "storage.deleteAfterCompletion"
    # Clone.
    CLONE_REQUEST: Final = "k8s.io/CloneRequest"
    CLONE_OF: Final = "k8s.io/CloneOf"
    CLONE_TYPE: Final = _A + "cloneType"
    CLONE_TOKEN: Final = _A + "storage.clone.token"
    EXTENDED_CLONE_TOKEN: Final = _A + "storage.extended.clone.token"
    CLONE_SOURCE_POD: Final = _A + "storage.sourceClonePodName"
    OWNER_REF: Final = _A + "storage.ownerRef"
    # The CDI CR's spec.config is copied into the CDIConfig.
    CONFIG_AUTHORITY: Final = _A + "configAuthority"


class Label:
    APP: Final = "app"
    APP_VALUE: Final = "containerized-data-importer"
    COMPONENT: Final = _A[:-1]  # "cdi.kubevirt.io": cdi-deployment, cdi-uploadproxy, cdi-upload-server, ...
    APPLY_STORAGE_PROFILE: Final = _A + "applyStorageProfile"
    FILLING_UP_ALERT: Final = "alerts.k8s.io/KubePersistentVolumeFillingUp"


class Reason:
    """Event (and condition) reasons."""

    IMPORT_SCHEDULED: Final = "ImportScheduled"
    IMPORT_IN_PROGRESS: Final = "ImportInProgress"
    IMPORT_SUCCEEDED: Final = "ImportSucceeded"
    IMPORT_FAILED: Final = "ImportFailed"
    UPLOAD_SCHEDULED: Final = "UploadScheduled"
    UPLOAD_READY: Final = "UploadReady"
    UPLOAD_SUCCEEDED: Final = "UploadSucceeded"
    UPLOAD_FAILED: Final = "UploadFailed"
    CLONE_SCHEDULED: Final = "CloneScheduled"
    CLONE_IN_PROGRESS: Final = "CloneInProgress"
    CLONE_SUCCEEDED: Final = "CloneSucceeded"
    CLONE_FAILED: Final = "CloneFailed"
    CLONE_SOURCE_IN_USE: Final = "CloneSourceInUse"
    CLONE_WITHOUT_SOURCE: Final = "CloneWithoutSource"
    CLONE_VALIDATION_FAILED: Final = "CloneValidationFailed"
    INCOMPATIBLE_PVC: Final = "ErrIncompatiblePVC"
    BOUND: Final = "Bound"
    PENDING: Final = "Pending"
    NOT_FOUND: Final = "NotFound"
    TRANSFER_RUNNING: Final = "TransferRunning"
    COMPLETED: Final = "Completed"
    ERROR: Final = "Error"
    IMAGE_PULL_FAILED: Final = "ImagePullFailed"
    UNSCHEDULABLE: Final = "Unschedulable"
    CLAIM_NOT_VALID: Final = "ErrClaimNotValid"
    CLAIM_LOST: Final = "ErrClaimLost"
    RESOURCE_EXISTS: Final = "ErrResourceExists"
    EXCEEDED_QUOTA: Final = "ErrExceededQuota"
    STARTING_POD: Final = "ErrStartingPod"
    IMPORT_FAILED_PVC: Final = "ErrImportFailed"  # the Warning on the PVC when the importer exits non-zero
    IMPORT_TARGET_IN_USE: Final = "ImportTargetInUse"
    SCRATCH_REQUIRED: Final = "Scratch space required"
    CREATING_SCRATCH: Final = "CreatingScratchSpace"


# The importer's progress counter, a 0-100 percentage, labelled with the DataVolume's UID.
IMPORT_PROGRESS_METRIC: Final = "kubevirt_cdi_import_progress_total"
CLONE_PROGRESS_METRIC: Final = "kubevirt_cdi_clone_progress_total"
PROGRESS_OWNER_LABEL: Final = "ownerUID"

# CDI's global filesystem overhead, the share of a Filesystem claim kept from the image.
DEFAULT_FILESYSTEM_OVERHEAD: Final = "0.06"


class ImporterEnv:
    """The environment of an importer pod (``importer-<pvc>``, container ``importer``)."""

    SOURCE: Final = "IMPORTER_SOURCE"
    ENDPOINT: Final = "IMPORTER_ENDPOINT"
    CONTENT_TYPE: Final = "IMPORTER_CONTENTTYPE"
    IMAGE_SIZE: Final = "IMPORTER_IMAGE_SIZE"
    OWNER_UID: Final = "OWNER_UID"
    FILESYSTEM_OVERHEAD: Final = "FILESYSTEM_OVERHEAD"
    INSECURE_TLS: Final = "INSECURE_TLS"
    PULL_METHOD: Final = "IMPORTER_PULL_METHOD"
    PREALLOCATION: Final = "PREALLOCATION"
    CACHE_MODE: Final = "CACHE_MODE"
    ACCESS_KEY_ID: Final = "IMPORTER_ACCESS_KEY_ID"  # from the secretRef's key accessKeyId
    SECRET_KEY: Final = "IMPORTER_SECRET_KEY"  # from the secretRef's key secretKey
    EXTRA_HEADER_PREFIX: Final = "IMPORTER_EXTRA_HEADER_"
    CERT_DIR: Final = "IMPORTER_CERT_DIR"


class NodePull:
    """A registry import with ``pullMethod: node``: the image runs as a container of the importer pod (the
    node's runtime pulls it) serving its disk on localhost; the importer fetches it over HTTP."""

    SERVER_CONTAINER: Final = "server"
    INIT_CONTAINER: Final = "init"
    SHARED_VOLUME: Final = "shared-volume"
    SHARED_DIR: Final = "/shared"
    READY_FILE: Final = "/shared/ready"  # the server writes the disk's file name into it
    DONE_FILE: Final = "/shared/done"  # the importer creates it when done; the server then exits
    PORT: Final = 8100
    ENDPOINT: Final = "http://localhost:8100/disk.img"
    IMAGE_DIR: Final = "/disk"


class ImporterPaths:
    """Where an importer pod finds its volumes."""

    DATA_DIR: Final = "/data"
    DISK_IMAGE: Final = "/data/disk.img"
    BLOCK_DEVICE: Final = "/dev/cdi-block-volume"
    SCRATCH_DIR: Final = "/scratch"
    CERT_DIR: Final = "/certs"
    PROXY_CERT_DIR: Final = "/proxycerts/"
    EXTRA_HEADERS_DIR: Final = "/extraheaders"
    TERMINATION_LOG: Final = "/dev/termination-log"


# Secret keys of a DataVolume source's secretRef.
SECRET_ACCESS_KEY_ID: Final = "accessKeyId"
SECRET_SECRET_KEY: Final = "secretKey"

IMPORTER_CONTAINER: Final = "importer"
IMPORTER_POD_PREFIX: Final = "importer-"
SCRATCH_SUFFIX: Final = "-scratch"
METRICS_PORT_NAME: Final = "metrics"
METRICS_PORT: Final = 8443


class ImporterExtraEnv:
    """The rest of an importer pod's environment: CDI sets every one, most empty for http, registry
    and blank sources (the values belong to sources and proxies not configured)."""

    DISK_ID: Final = "IMPORTER_DISK_ID"
    UUID: Final = "IMPORTER_UUID"
    READY_FILE: Final = "IMPORTER_READY_FILE"
    DONE_FILE: Final = "IMPORTER_DONE_FILE"
    BACKING_FILE: Final = "IMPORTER_BACKING_FILE"
    THUMBPRINT: Final = "IMPORTER_THUMBPRINT"
    HTTP_PROXY: Final = "http_proxy"
    HTTPS_PROXY: Final = "https_proxy"
    NO_PROXY: Final = "no_proxy"
    CURRENT_CHECKPOINT: Final = "IMPORTER_CURRENT_CHECKPOINT"
    PREVIOUS_CHECKPOINT: Final = "IMPORTER_PREVIOUS_CHECKPOINT"
    FINAL_CHECKPOINT: Final = "IMPORTER_FINAL_CHECKPOINT"
    REGISTRY_IMAGE_ARCHITECTURE: Final = "IMPORTER_REGISTRY_IMAGE_ARCHITECTURE"
    PROXY_CERT_DIR: Final = "IMPORTER_PROXY_CERT_DIR"


CACHE_MODE_TRY_NONE: Final = "TRYNONE"
# Annotations of the importer pod and the PVC not in :class:`Annotation`.
POD_CREATED_BY_CONTROLLER: Final = _A + "storage.createdByController"
IMPORT_REGISTRY_IMAGE_ARCHITECTURE: Final = _A + "storage.import.registryImageArchitecture"
PREALLOCATION_APPLIED: Final = _A + "storage.preallocation"
OWNED_BY_DATA_VOLUME: Final = _A + "ownedByDataVolume"
OWNER_UID_ANNOTATION: Final = _A + "ownerUID"
MINIMUM_SUPPORTED_PVC_SIZE: Final = _A + "minimumSupportedPvcSize"
EXTERNAL_POPULATION: Final = _A + "externalPopulation"
DEFAULT_STORAGE_CLASS: Final = "storageclass.kubernetes.io/is-default-class"
DEFAULT_VIRT_STORAGE_CLASS: Final = "storageclass.kubevirt.io/is-default-virt-class"
SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
# Labels of worker pods and claims not in :class:`Label`.
PROMETHEUS_LABEL: Final = "prometheus.cdi.kubevirt.io"
FILLING_UP_ALERT_DISABLED: Final = "disabled"
VELERO_EXCLUDE: Final = "velero.io/exclude-from-backup"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
CONTROLLER_NAME: Final = "cdi-controller"

# The CDIConfig feature gate under which a WaitForFirstConsumer claim is left for its consumer to bind.
HONOR_WAIT_FOR_FIRST_CONSUMER: Final = "HonorWaitForFirstConsumer"
# The Lease the DataVolume controllers' replicas compete for (CDI's name).
CONTROLLER_LEASE: Final = "cdi-controller-leader-election-helper"


class Clone:
    """Host-assisted cloning: a source pod in the source claim's namespace streams the claim to an upload
    server in clone mode on the target claim."""

    STRATEGY_COPY: Final = "copy"
    SOURCE_POD_SUFFIX: Final = "-source-pod"
    SOURCE_CONTAINER: Final = "cdi-clone-source"
    SOURCE_MOUNT: Final = "/var/run/cdi/clone/source"
    BLOCK_DEVICE: Final = "/dev/cdi-block-volume"
    SOURCE_POD_FINALIZER: Final = _A + "cloneSource"
    UNIQUE_ID_LABEL: Final = _A + "storage.clone.cloneUniqeId"  # CDI's spelling
    SOURCE_CLAIM_LABEL: Final = _A + "hostAssistedSourcePodCloneSource"
    SOURCE_IN_USE_REQUEUE_SECONDS: Final = 5.0
    # Cross-namespace clones: the controller's own long-lived token, minted from the short one.
    EXTENDED_TOKEN_LIFETIME_SECONDS: Final = 10 * 365 * 24 * 3600
    MESSAGE_SCHEDULED: Final = "Cloning from %s/%s into %s/%s scheduled"
    MESSAGE_IN_PROGRESS: Final = "Cloning from %s/%s into %s/%s in progress"
    MESSAGE_FAILED: Final = "Cloning from %s/%s into %s/%s failed"
    MESSAGE_SUCCEEDED: Final = "Successfully cloned from %s/%s into %s/%s"
    MESSAGE_WITHOUT_SOURCE: Final = "The source %s %s doesn't exist"
    MESSAGE_VALIDATION_FAILED: Final = "The clone doesn't meet the validation requirements: %s"


class Upload:
    """The upload path: the token API, the proxy and the per-claim upload server (``cdi-upload-<pvc>``)."""

    TOKEN_ISSUER: Final = "cdi-apiserver"
    TOKEN_OPERATION: Final = "Upload"
    CLONE_TOKEN_OPERATION: Final = "Clone"
    TOKEN_LIFETIME_SECONDS: Final = 300
    TOKEN_LEEWAY_SECONDS: Final = 10
    # The Secret (in CDI's namespace) holding the token signing key, PEM under these keys.
    SIGNING_KEY_SECRET: Final = "cdi-api-signing-key"
    PRIVATE_KEY: Final = "id_rsa"
    PUBLIC_KEY: Final = "id_rsa.pub"
    API_SERVICE: Final = "cdi-api"
    APISERVER: Final = "cdi-apiserver"
    PROXY: Final = "cdi-uploadproxy"
    PROXY_PORT: Final = 8443
    SERVER_PORT: Final = 8443
    # Certificates: signer Secrets, their CA bundle ConfigMaps and the target Secrets.
    APISERVER_SIGNER: Final = "cdi-apiserver-signer"
    APISERVER_SIGNER_BUNDLE: Final = "cdi-apiserver-signer-bundle"
    APISERVER_SERVER_CERT: Final = "cdi-apiserver-server-cert"
    PROXY_SIGNER: Final = "cdi-uploadproxy-signer"
    PROXY_SIGNER_BUNDLE: Final = "cdi-uploadproxy-signer-bundle"
    PROXY_SERVER_CERT: Final = "cdi-uploadproxy-server-cert"
    SERVER_SIGNER: Final = "cdi-uploadserver-signer"
    SERVER_SIGNER_BUNDLE: Final = "cdi-uploadserver-signer-bundle"
    CLIENT_SIGNER: Final = "cdi-uploadserver-client-signer"
    CLIENT_SIGNER_BUNDLE: Final = "cdi-uploadserver-client-signer-bundle"
    CLIENT_CERT: Final = "cdi-uploadserver-client-cert"
    CLIENT_NAME: Final = "client.upload-server.cdi.kubevirt.io"
    # Paths the proxy accepts and passes on to the upload server.
    PATH_SYNC: Final = "/v1beta1/upload"
    PATH_ASYNC: Final = "/v1beta1/upload-async"
    PATH_FORM_SYNC: Final = "/v1beta1/upload-form"
    PATH_FORM_ASYNC: Final = "/v1beta1/upload-form-async"
    PATH_ARCHIVE: Final = "/v1beta1/upload-archive"
    PATH_ARCHIVE_ALPHA: Final = "/v1alpha1/upload-archive"
    SYNC_PATHS: Final = (PATH_SYNC, "/v1alpha1/upload")
    ASYNC_PATHS: Final = (PATH_ASYNC, "/v1alpha1/upload-async")
    FORM_SYNC_PATHS: Final = (PATH_FORM_SYNC, "/v1alpha1/upload-form")
    FORM_ASYNC_PATHS: Final = (PATH_FORM_ASYNC, "/v1alpha1/upload-form-async")
    PROXY_PATHS: Final = SYNC_PATHS + ASYNC_PATHS + FORM_SYNC_PATHS + FORM_ASYNC_PATHS
    HEALTHZ: Final = "/healthz"
    # The upload server pod and Service, one per claim.
    RESOURCE_PREFIX: Final = "cdi-upload"
    CONTAINER: Final = "cdi-upload-server"
    COMPONENT_VALUE: Final = "cdi-upload-server"
    SERVICE_LABEL: Final = "service"
    TARGET_LABEL: Final = _A + "uploadTarget"
    POD_CREATED_BY_UPLOAD: Final = _A + "storage.createdByUploadController"
    CLIENT_NAME_ANNOTATION: Final = _A + "uploadClientName"
    CERT_MOUNT: Final = "/etc/tls/"
    SERVER_CERT_FILE: Final = "/etc/tls/tls.crt"
    SERVER_KEY_FILE: Final = "/etc/tls/tls.key"
    CLIENT_CA_FILE: Final = "/etc/tls/ca.crt"
    IMAGE_SIZE_ENV: Final = "UPLOAD_IMAGE_SIZE"
    CLIENT_NAME_ENV: Final = "CLIENT_NAME"
    DEADLINE_ENV: Final = "DEADLINE"
    DESTINATION_ENV: Final = "DESTINATION"

"""The project's cdi-apiserver: CDI v1.63's aggregated API for ``upload.cdi.kubevirt.io/v1beta1``
UploadTokenRequests, which hands ``virtctl image-upload`` the short-lived token the upload proxy checks,
and CDI's DataVolume mutating webhook, which authorizes clones as the requesting user and adds the clone
token (:mod:`.datavolume_mutate`).

CDI's other admission webhooks (DataVolume validation, PVC, CDI CR, ...) are not built here.
"""

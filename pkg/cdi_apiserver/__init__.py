"""The project's cdi-apiserver: CDI v1.63's aggregated API for ``upload.cdi.kubevirt.io/v1beta1``
UploadTokenRequests, which hands ``virtctl image-upload`` the short-lived token the upload proxy checks.

Only the token API is served; CDI's admission webhooks (DataVolume, PVC, CDI CR, ...) are not built here.
"""

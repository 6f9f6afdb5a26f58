"""The upload server: the process of an ``cdi-upload-<pvc>`` pod, which takes one disk image (or a tar
archive) from the upload proxy over mutual TLS, writes it into the claim through the importer's
pipeline, reports the outcome in its termination message and exits, as CDI's cdi-uploadserver does."""

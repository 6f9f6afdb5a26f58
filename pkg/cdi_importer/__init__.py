"""The importer worker: the process of an ``importer-<pvc>`` pod, which fills a DataVolume's claim from
an http(s) URL, a container registry or nothing (a blank image), configured by the pod's environment
as CDI's cdi-importer is."""

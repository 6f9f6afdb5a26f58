"""One mutator per KubeVirt mutating webhook path; each answers with a JSONPatch."""

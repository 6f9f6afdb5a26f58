"""virtctl: the user CLI for what REST does not express well."""

"""virt-handler's metrics: the per-VMI series it collects from the launchers at scrape time."""

"""virt-controller's metrics: scrape-time collectors over its informer caches, and the few it records."""

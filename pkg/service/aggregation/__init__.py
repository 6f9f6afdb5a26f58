"""What an aggregated API server (virt-api's subresources, cdi-apiserver's token requests) needs to stand
behind the Kubernetes aggregator: the front proxy's published identity, the user it names in request
headers, the SubjectAccessReview that decides a request, and the middleware that asks it.
"""

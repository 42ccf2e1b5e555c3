package redisconn

// ClusterBuilder exposes the builder a client hands out before it connects.
var ClusterBuilder = clusterBuilder

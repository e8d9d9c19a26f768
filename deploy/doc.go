// Package deploy holds the production-like deployment of splathost: the Dockerfiles, the
// configuration files docker-compose.yml mounts, and a test that loads the compose file with
// the compose-spec loader, so a broken deployment is caught by `go test` on a machine without
// a Docker engine instead of at `docker compose up` on a server.
package deploy

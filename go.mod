module github.com/bucketgate/bucketgate

go 1.26.8

require (
	github.com/redis/rueidis v1.0.79
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/sys v0.47.0 // indirect

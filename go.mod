module github.com/bucketgate/bucketgate

go 1.26.8

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/aws/aws-lambda-go v1.55.1
	github.com/redis/rueidis v1.0.79
	github.com/redis/rueidis/mock v1.0.78
	gopkg.in/yaml.v3 v3.0.1
	pgregory.net/rapid v1.3.0
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/mock v0.6.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

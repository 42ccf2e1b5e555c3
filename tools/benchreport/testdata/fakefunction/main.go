// Command fakefunction stands in for a Lambda bootstrap in benchreport's tests: like
// aws-lambda-go's lambda.Start, it is ready when it asks the runtime API for the next
// invocation.
package main

import (
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get("http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/invocation/next")
	if err != nil {
		os.Exit(1)
	}
	_ = resp.Body.Close()
}

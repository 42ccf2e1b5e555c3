package main

import (
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

// awsRefusing is one endpoint for DynamoDB, Lambda and CloudFormation that refuses every
// request as the service refuses a caller's credentials: with the error code the
// service's refusal carries (code for DynamoDB and Lambda, cfnCode for CloudFormation)
// and AWS's message, in the service's own protocol.
func awsRefusing(t *testing.T, code, cfnCode string, status int, message func(action string) string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		m := credentialScope.FindStringSubmatch(req.Header.Get("Authorization"))
		if m == nil {
			http.Error(w, "unsigned", http.StatusBadRequest)
			return
		}
		switch m[1] {
		case "dynamodb":
			op := req.Header.Get("X-Amz-Target")
			body := fmt.Sprintf(`{"__type":"com.amazon.coral.service#%s","Message":%q}`, code, message("dynamodb:"+op[strings.LastIndex(op, ".")+1:]))
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		case "lambda":
			lambdatest.ServiceError(w, status, code, message("lambda:InvokeFunction"))
		case "cloudformation":
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(status)
			fmt.Fprintf(w, `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>r1</RequestId></ErrorResponse>`,
				cfnCode, message("cloudformation:DescribeStacks"))
		}
	}))
	t.Cleanup(srv.Close)
	localAWS(t)
	for _, service := range []string{"DYNAMODB", "LAMBDA", "CLOUDFORMATION"} {
		t.Setenv("AWS_ENDPOINT_URL_"+service, srv.URL)
	}
}

// deniedMessage is AWS's message refusing action to a user without the grant.
func deniedMessage(action string) string {
	return "User: arn:aws:iam::123456789012:user/ops is not authorized to perform: " + action +
		" on resource: the-resource because no identity-based policy allows the " + action + " action"
}

// A command AWS refuses fails with one line (exit 1) that says what to do: not allowed
// names the action and the resource as AWS reported them and points to the CLI's
// policy; credentials AWS does not take (expired, unknown) say to renew them, and a
// signature it does not take says what makes one wrong.
func TestAWSRefusals(t *testing.T) {
	env := map[string]string{settings.EnvRegistryTable: table, envCheckFunction: "fn"}
	stack := map[string]string{envStack: "prod"}
	tests := []struct {
		name          string
		code, cfnCode string
		status        int
		env           map[string]string
		args          []string
		want          []string
	}{
		{"table denied", "AccessDeniedException", "AccessDenied", http.StatusBadRequest, env, []string{"keys", "list"},
			[]string{"not allowed to use table " + table + ": these credentials need dynamodb:Scan on it", deniedMessage("dynamodb:Scan"), "iam-policy.json"}},
		{"table denied, a write", "AccessDeniedException", "AccessDenied", http.StatusBadRequest, env, []string{"keys", "revoke", "key:" + strings.Repeat("a", bucketgate.DigestLen)},
			[]string{"these credentials need dynamodb:UpdateItem", deniedMessage("dynamodb:UpdateItem"), "iam-policy.json"}},
		{"keys init denied", "AccessDeniedException", "AccessDenied", http.StatusBadRequest, env, []string{"keys", "init"},
			[]string{"these credentials need dynamodb:CreateTable on it", deniedMessage("dynamodb:CreateTable"), "keys init creates a table for local use: a deployed stack's table is template.yaml's, and cmd/bucketgate/iam-policy.json grants no dynamodb:CreateTable"}},
		{"function denied", "AccessDeniedException", "AccessDenied", http.StatusForbidden, env, []string{"buckets", "show", "203.0.113.10"},
			[]string{"not allowed to invoke fn: these credentials need lambda:InvokeFunction on it", deniedMessage("lambda:InvokeFunction"), "iam-policy.json"}},
		{"stack denied", "AccessDeniedException", "AccessDenied", http.StatusForbidden, stack, []string{"keys", "list"},
			[]string{"not allowed to read stack prod (BUCKETGATE_STACK): these credentials need cloudformation:DescribeStacks on it", deniedMessage("cloudformation:DescribeStacks"), "iam-policy.json"}},
		{"table, expired token", "ExpiredTokenException", "ExpiredToken", http.StatusBadRequest, env, []string{"keys", "list"},
			[]string{"table " + table + ": AWS refused these credentials: renew them", "The security token included in the request is expired"}},
		{"function, expired token", "ExpiredTokenException", "ExpiredToken", http.StatusForbidden, env, []string{"usage", "203.0.113.10"},
			[]string{"function fn: AWS refused these credentials: renew them", "The security token included in the request is expired"}},
		{"stack, unknown key", "UnrecognizedClientException", "InvalidClientTokenId", http.StatusForbidden, stack, []string{"buckets", "show", "203.0.113.10"},
			[]string{"stack prod (BUCKETGATE_STACK): AWS refused these credentials: renew them", "The security token included in the request is invalid"}},
		{"table, bad signature", "InvalidSignatureException", "SignatureDoesNotMatch", http.StatusBadRequest, env, []string{"keys", "list"},
			[]string{"table " + table + ": AWS refused the request's signature: check that AWS_SECRET_ACCESS_KEY", "The request signature we calculated does not match"}},
		{"stack, bad signature", "InvalidSignatureException", "SignatureDoesNotMatch", http.StatusForbidden, stack, []string{"keys", "list"},
			[]string{"stack prod (BUCKETGATE_STACK): AWS refused the request's signature", "The request signature we calculated does not match"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			message := deniedMessage
			switch {
			case strings.HasPrefix(tc.code, "Expired"):
				message = func(string) string { return "The security token included in the request is expired" }
			case tc.code == "InvalidSignatureException":
				message = func(string) string {
					return "The request signature we calculated does not match the signature you provided"
				}
			case tc.code != "AccessDeniedException":
				message = func(string) string { return "The security token included in the request is invalid" }
			}
			awsRefusing(t, tc.code, tc.cfnCode, tc.status, message)
			c := &cli{t: t, env: tc.env}
			code, stdout, stderr := c.run(tc.args...)
			if code != exitError || stdout != "" || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 1 and one line on stderr", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q: want it to say %q", stderr, w)
				}
			}
		})
	}
}

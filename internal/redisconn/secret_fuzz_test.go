package redisconn

import (
	"errors"
	"strings"
	"testing"
)

// secretEcho is the shortest secret a test checks an error for: shorter texts occur in
// error messages by chance.
const secretEcho = 8

// FuzzParseSecret: any secret text gives a password or an errSecretShape error that
// does not quote the text.
func FuzzParseSecret(f *testing.F) {
	for _, seed := range []string{
		"s3cret", "", " ", "{", "{}", `{"password":"p"}`, `{"username":"u","password":"p"}`,
		`{"password":""}`, `{"password":7}`, `{"password": s3cretvalue}`, `  {"password":"p","extra":[1,2]}`, "[1]", "s3cret\n", "\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, password, err := parseSecret("arn:test", text)
		if err != nil {
			if !errors.Is(err, errSecretShape) {
				t.Fatalf("error %v does not wrap errSecretShape", err)
			}
			if len(text) >= secretEcho && strings.Contains(err.Error(), text) {
				t.Fatalf("error %v quotes the secret", err)
			}
			return
		}
		if password == "" {
			t.Fatalf("%q: no error and no password", text)
		}
	})
}

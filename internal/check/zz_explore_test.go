package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/settings"
)

func TestZZExplore(t *testing.T) {
	f, at := usageFixture(t, settings.DefaultUsageDays)
	rules := `"rules":[{"name":"burst","capacity":100,"refillPerSecond":0.0001},{"name":"daily","limit":3,"period":"day"}]`
	for range 3 {
		f.invokeOK(t, []byte(`{"key":"acme",`+rules+`}`))
	}
	fmt.Printf("reset: %s\n", f.invokeOK(t, []byte(`{"key":"acme","op":"reset",`+rules+`}`)))
	fmt.Printf("peek: %s\n", f.invokeOK(t, []byte(`{"key":"acme","cost":0,`+rules+`}`)))
	for range 3 {
		f.invokeOK(t, []byte(`{"key":"acme",`+rules+`}`))
	}
	at(time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC))
	fmt.Printf("refund next day: %s\n", f.invokeOK(t, []byte(`{"key":"acme","op":"refund","cost":2,`+rules+`}`)))
	fmt.Printf("peek: %s\n", f.invokeOK(t, []byte(`{"key":"acme","cost":0,`+rules+`}`)))
	fmt.Printf("usage: %s\n", f.invokeOK(t, []byte(`{"key":"acme","op":"usage","from":"2025-03-01"}`)))
}

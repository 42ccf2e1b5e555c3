package bucket_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// storedState reads every field of identity's hash as the model keeps it, failing the
// test on a field the script does not write or a value it would not store.
func storedState(t testing.TB, c rueidis.Client, id string) bucket.ModelState {
	t.Helper()
	fields, err := c.Do(context.Background(), c.B().Hgetall().Key(bucket.Key(id)).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("HGETALL %q: %v", id, err)
	}
	var st bucket.ModelState
	whole := func(field, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%q: field %s holds %q, not a whole number", id, field, v)
		}
		return n
	}
	for f, v := range fields {
		switch {
		case strings.HasPrefix(f, lua.UsagePrefix):
			dayText, what, ok := strings.Cut(strings.TrimPrefix(f, lua.UsagePrefix), ":")
			day := whole(f, dayText)
			if !ok || len(what) != 1 {
				t.Fatalf("%q: field %s is no usage field", id, f)
			}
			if st.Usage == nil {
				st.Usage = map[int64]bucket.ModelUsage{}
			}
			u := st.Usage[day]
			switch what[0] {
			case lua.UsageAllowed:
				u.Allowed = whole(f, v)
			case lua.UsageExtra:
				u.Cost = whole(f, v) // the cost above one each; the allowed checks are added below
			case lua.UsageLimited:
				u.Limited = whole(f, v)
			default:
				t.Fatalf("%q: field %s is no usage field", id, f)
			}
			st.Usage[day] = u
		case strings.HasSuffix(f, lua.TokensSuffix), strings.HasSuffix(f, lua.StampSuffix):
			name, suffix, _ := strings.Cut(f, ":")
			if st.Buckets == nil {
				st.Buckets = map[string]bucket.ModelBucket{}
			}
			b := st.Buckets[name]
			if ":"+suffix == lua.TokensSuffix {
				if b.Tokens, err = strconv.ParseFloat(v, 64); err != nil {
					t.Fatalf("%q: field %s holds %q", id, f, v)
				}
			} else {
				stamp, marked := strings.CutPrefix(v, string(lua.MarkLimited))
				b.Stamp, b.Limited = whole(f, stamp), marked
			}
			st.Buckets[name] = b
		case strings.HasSuffix(f, lua.UsedSuffix), strings.HasSuffix(f, lua.EndSuffix), strings.HasSuffix(f, lua.LimitSuffix):
			name, suffix, _ := strings.Cut(f, ":")
			if st.Quotas == nil {
				st.Quotas = map[string]bucket.ModelQuota{}
			}
			q := st.Quotas[name]
			if ":"+suffix == lua.UsedSuffix {
				q.Used = whole(f, v)
			} else if ":"+suffix == lua.LimitSuffix {
				q.Of = whole(f, v)
			} else {
				end, marked := strings.CutPrefix(v, string(lua.MarkLimited))
				if digits, ok := strings.CutSuffix(end, lua.MarkReached80); ok {
					end, q.Reached = digits, 1
				} else if digits, ok := strings.CutSuffix(end, lua.MarkReached100); ok {
					end, q.Reached = digits, 2
				}
				q.End, q.Limited = whole(f, end), marked
			}
			st.Quotas[name] = q
		default:
			t.Fatalf("%q: field %s is not the script's", id, f)
		}
	}
	for day, u := range st.Usage {
		u.Cost += u.Allowed
		st.Usage[day] = u
	}
	archive, err := c.Do(context.Background(), c.B().Hgetall().Key(bucket.UsageKey(id)).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("HGETALL %q's archive: %v", id, err)
	}
	for f, v := range archive {
		var u bucket.ModelUsage
		if _, err := fmt.Sscanf(v, "%d %d %d", &u.Allowed, &u.Cost, &u.Limited); err != nil || fmt.Sprintf("%d %d %d", u.Allowed, u.Cost, u.Limited) != v {
			t.Fatalf("%q: archive field %s holds %q, not three whole numbers", id, f, v)
		}
		if st.Archive == nil {
			st.Archive = map[int64]bucket.ModelUsage{}
		}
		st.Archive[whole(f, f)] = u
	}
	return st
}

// compareStored checks that identity's hash holds exactly the model's state at now,
// field by field, and, with expiry, that the key expires when the model says.
func compareStored(t *testing.T, c rueidis.Client, model *bucket.Model, id string, now time.Time, expiry bool) {
	t.Helper()
	got, want := storedState(t, c, id), model.State(id, now)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q at %v:\nredis %+v\nmodel %+v", id, now, got, want)
	}
	if expiry {
		compareExpiry(t, c, model, id)
		got := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.UsageKey(id)).Build())) // -2: no key
		want, ok := model.UsageExpiresAt(id)
		if !ok && got != -2 || ok && got != want.UnixMilli() {
			t.Fatalf("%q's archive: PEXPIRETIME %d, model %v (%v)", id, got, want.UnixMilli(), ok)
		}
	}
}

// compareUsage checks that Limiter.Usage reads identity's usage of the days from first
// to last as the model holds it at now.
func compareUsage(t *testing.T, l *bucket.Limiter, model *bucket.Model, id string, first, last, now time.Time) {
	t.Helper()
	got, err := l.Usage(context.Background(), id, first, last)
	if err != nil {
		t.Fatalf("Usage(%q): %v", id, err)
	}
	if want := model.Usage(id, first, last, now); !reflect.DeepEqual(got, want) {
		t.Fatalf("%q's usage from %v to %v:\nredis %+v\nmodel %+v", id, first, last, got, want)
	}
}

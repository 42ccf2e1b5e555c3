package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// MsgUsage is the message of the info line for a usage request on the operator's path
// (one naming an identity), and of the warning for one Redis did not answer.
const MsgUsage = "usage report"

// usage answers c, a usage request: the identity's usage of every day from c.from to
// c.to (To defaults to today, by Redis's clock in UTC, From to To), within the days the
// engine keeps. A range it cannot answer is an invalid request naming the field;
// Redis's failure a function error of type checkapi.ErrorTypeUnavailable.
func (h *Handler) usage(ctx context.Context, c check) ([]byte, error) {
	attrs := []slog.Attr{slog.String(telemetry.AttrIdentity, c.logged), slog.String(telemetry.AttrOp, c.req.Op.String())}
	if c.lookupErr != nil {
		return nil, h.unavailable(ctx, c, attrs, c.lookupErr)
	}
	if h.UsageDays == 0 {
		err := fmt.Errorf("%s: %s is off in this function: USAGE_RETENTION_DAYS is 0", fieldOp, checkapi.OpUsage)
		h.Log.LogAttrs(ctx, slog.LevelWarn, "invalid request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	if h.NoAddressUsage && strings.HasPrefix(c.req.Identity, bucketgate.IPPrefix) {
		err := fmt.Errorf("%s: %s of an address is off in this function: USAGE_OF_ADDRESSES is false", fieldOp, checkapi.OpUsage)
		h.Log.LogAttrs(ctx, slog.LevelWarn, "invalid request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	var first, last time.Time
	var spanErr error // the days asked for are not today's or not kept
	days, err := h.Guard.Usage(ctx, c.req.Identity, func(now time.Time) (time.Time, time.Time, error) {
		first, last, spanErr = h.usageDays(c, now)
		return first, last, spanErr
	})
	if spanErr == nil && !first.IsZero() {
		attrs = append(attrs, slog.String(fieldFrom, first.Format(time.DateOnly)), slog.String(fieldTo, last.Format(time.DateOnly)))
	}
	switch {
	case spanErr != nil:
		h.Log.LogAttrs(ctx, slog.LevelWarn, "invalid request", slog.String(telemetry.AttrError, spanErr.Error()))
		return nil, invalidRequest(spanErr)
	case errors.Is(err, bucketgate.ErrInvalid): // the engine and the range check disagree
		h.Log.LogAttrs(ctx, slog.LevelError, "engine refused a validated request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	case err != nil:
		return nil, h.unavailable(ctx, c, attrs, err)
	}
	if c.explicit {
		h.Log.LogAttrs(ctx, slog.LevelInfo, MsgUsage, attrs...)
	}
	u := checkapi.Usage{Identity: c.req.Identity, From: first.Format(time.DateOnly), To: last.Format(time.DateOnly), Days: make([]checkapi.UsageDay, len(days))}
	for i, d := range days {
		u.Days[i] = checkapi.UsageDay{Date: d.Day.Format(time.DateOnly), UsageCounts: checkapi.UsageCounts{Allowed: d.Allowed, Limited: d.Limited, Cost: d.Cost}}
		u.Total.Allowed += d.Allowed
		u.Total.Limited += d.Limited
		u.Total.Cost += d.Cost
	}
	return json.Marshal(u)
}

// unavailable logs and returns the error of usage request c, which Redis did not answer
// (err), or answered with what is not bucketgate's usage (checkapi.NotUsage), or whose
// identity the registry could not look up (c.lookupErr; checkapi.NoConfiguration when
// no configuration document loads): a function error of type
// checkapi.ErrorTypeUnavailable.
func (h *Handler) unavailable(ctx context.Context, c check, attrs []slog.Attr, err error) error {
	h.Log.LogAttrs(ctx, slog.LevelWarn, MsgUsage, append(attrs, slog.String(telemetry.AttrError, err.Error()))...)
	what := "Redis did not answer"
	switch {
	case errors.Is(c.lookupErr, registry.ErrNoDocumentLoads): // every call meets it
		what = checkapi.NoConfiguration
	case c.lookupErr != nil:
		what = "the registry could not say whose usage it is"
	case guard.Classify(err) == guard.FailureBadResponse:
		what = checkapi.NotUsage
	}
	return messages.InvokeResponse_Error{Type: checkapi.ErrorTypeUnavailable, Message: fmt.Sprintf("usage of %s: %s: %v", c.logged, what, err)}
}

// whoseUsage returns c, a usage request, on the identity whose usage it reads: a key of
// an account counts in its account's usage, an account made from a lone key in that
// key's (see follows); with lookupErr set when the registry could not say.
func (h *Handler) whoseUsage(ctx context.Context, v registry.View, c check, inv *telemetry.Invocation) check {
	switch {
	case !c.follow:
	case v.Config == nil:
		c.lookupErr = fmt.Errorf("no configuration: %w", v.Err)
	default:
		checks := []check{c}
		_ = h.resolveTenants(ctx, v, checks, false, inv) // a usage request has no cost to refuse
		c = checks[0]
	}
	return c
}

// usageDays returns the first and last day of usage request c, checked against today,
// now's day, and the days kept.
func (h *Handler) usageDays(c check, now time.Time) (first, last time.Time, err error) {
	today := bucketgate.UTCDay(now)
	earliest := today.AddDate(0, 0, 1-h.UsageDays)
	last, first = today, today
	if c.to != "" {
		last, _ = ParseDay(c.to) // parse checked it
	}
	first = last
	if c.from != "" {
		first, _ = ParseDay(c.from)
	}
	switch {
	case last.After(today):
		return first, last, fmt.Errorf("%s: %s is after today, %s (UTC, by Redis's clock)", fieldTo, c.to, today.Format(time.DateOnly))
	case first.After(last) && c.to == "": // to is today
		return first, last, fmt.Errorf("%s: %s is after today, %s (UTC, by Redis's clock; to left out is today)", fieldFrom, c.from, today.Format(time.DateOnly))
	case first.After(last):
		return first, last, fmt.Errorf("%s: %s is after %s, %s: the days are reversed", fieldFrom, c.from, fieldTo, last.Format(time.DateOnly))
	case first.Before(earliest):
		return first, last, fmt.Errorf("%s: %s is beyond the %d days of usage kept (USAGE_RETENTION_DAYS, today included): want %s or later",
			fieldWithDay(c), first.Format(time.DateOnly), h.UsageDays, earliest.Format(time.DateOnly))
	}
	return first, last, nil
}

// fieldWithDay names the field that gave c's first day: from, or to when from was left
// out.
func fieldWithDay(c check) string {
	if c.from == "" {
		return fieldTo
	}
	return fieldFrom
}

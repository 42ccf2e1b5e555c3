package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// BeginMigration starts moving slot from master from to master to, as resharding does
// (redis-cli --cluster reshard, ElastiCache online resharding): to imports it, from
// migrates it. Until EndMigration, from still serves the slot's keys it holds and
// redirects the others (ASK).
func BeginMigration(ctx context.Context, slot int, from, to *Server) error {
	fromID, toID, err := nodeIDs(ctx, from, to)
	if err != nil {
		return err
	}
	s := strconv.Itoa(slot)
	if err := to.command(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return err
	}
	return from.command(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", toID)
}

// EndMigration moves every key of slot from from to to (MIGRATE) and gives to the slot,
// ending what BeginMigration started.
func EndMigration(ctx context.Context, slot int, from, to *Server) error {
	_, toID, err := nodeIDs(ctx, from, to)
	if err != nil {
		return err
	}
	if err := MoveKeys(ctx, slot, from, to); err != nil {
		return err
	}
	s := strconv.Itoa(slot)
	for _, n := range []*Server{to, from} {
		if err := n.command(ctx, "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return err
		}
	}
	return nil
}

// MoveKeys moves every key of slot from from to to (MIGRATE), a slot BeginMigration
// began moving: from then redirects (ASK) every command on the slot's keys to to.
func MoveKeys(ctx context.Context, slot int, from, to *Server) error {
	s := strconv.Itoa(slot)
	for {
		keys, err := from.Command(ctx, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return err
		}
		if keys == "" {
			return nil
		}
		host, port, _ := strings.Cut(to.Addr, ":")
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, strings.Split(keys, "\n")...)
		if err := from.command(ctx, args...); err != nil {
			return err
		}
	}
}

// nodeIDs returns the cluster node ids of a and b.
func nodeIDs(ctx context.Context, a, b *Server) (aID, bID string, err error) {
	if aID, err = a.Command(ctx, "CLUSTER", "MYID"); err == nil {
		bID, err = b.Command(ctx, "CLUSTER", "MYID")
	}
	if err != nil {
		return "", "", fmt.Errorf("redistest: node ids: %w", err)
	}
	return aID, bID, nil
}

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// NewConfiguration returns the configuration and key registry of s, cfg being the
// environment's document (LoadConfig). Without REGISTRY_TABLE: cfg, always, with its
// keys and tenants as the registry. With it: the DynamoDB table behind the cache of s
// (REGISTRY_CACHE_MS, REGISTRY_CACHE_SIZE, REGISTRY_TIMEOUT_MS) is the registry, and
// the table's configuration document, read now and then at most once per
// REGISTRY_CACHE_MS, is in force (cfg while the table holds none); invalid items and
// documents are logged to log. A document that lists keys or tenants while a table is
// set is an error (one registry, not two), and so are a table without an AWS region
// (ErrNoRegion) and a table whose document, and every earlier version read, does not
// load. A table that cannot be read is no error: until
// it answers, decisions follow the failure policy.
func NewConfiguration(s settings.Settings, cfg *config.Config, log *slog.Logger) (*registry.Live, error) {
	if s.RegistryTable == "" {
		registry.LogCaveats(context.Background(), log, cfg, 0)
		return registry.NewStatic(cfg, nil), nil
	}
	if cfg.ListsIdentities() {
		return nil, errors.New(settings.EnvRegistryTable + " is set and the configuration document lists keys or tenants: " +
			"with a table, the table is the registry; create them there (bucketgate keys create) and remove them from the document")
	}
	client, err := registry.NewClient(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", settings.EnvRegistryTable, s.RegistryTable, err)
	}
	if o := client.Options(); o.Region == "" && o.BaseEndpoint == nil { // every read would fail
		return nil, fmt.Errorf("%s=%s: %w to the table's", settings.EnvRegistryTable, s.RegistryTable, ErrNoRegion)
	}
	table := registry.NewTable(client, s.RegistryTable)
	live := registry.NewLive(table, registry.NewCache(table, RegistryOptions(s, log)), cfg,
		registry.LiveOptions{TTL: s.RegistryCacheTTL, Timeout: s.RegistryTimeout, Margin: guard.DefaultMargin, Log: log})
	if err := live.Load(context.Background()); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", settings.EnvRegistryTable, s.RegistryTable, err)
	}
	return live, nil
}

// RegistryOptions returns the registry cache's options of s (REGISTRY_CACHE_MS,
// REGISTRY_CACHE_SIZE, REGISTRY_TIMEOUT_MS), logging to log, with the guard's margin
// before the invocation's deadline: a lookup leaves the failure policy time to answer.
func RegistryOptions(s settings.Settings, log *slog.Logger) registry.Options {
	return registry.Options{
		TTL:     s.RegistryCacheTTL,
		Size:    s.RegistryCacheSize,
		Timeout: s.RegistryTimeout,
		Margin:  guard.DefaultMargin,
		Log:     log,
	}
}

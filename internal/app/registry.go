package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// NewRegistry returns the key registry of s: without REGISTRY_TABLE, the keys and
// tenants of the configuration document cfg; with it, the DynamoDB table behind the
// cache of s (REGISTRY_CACHE_MS, REGISTRY_CACHE_SIZE, REGISTRY_TIMEOUT_MS), resolving
// plans with cfg and logging invalid items to log. Making the table's client sends no
// request. A document that lists keys or tenants while a table is set is an error: one
// registry, not two.
func NewRegistry(s settings.Settings, cfg *config.Config, log *slog.Logger) (authorizer.Registry, error) {
	if s.RegistryTable == "" {
		return registry.NewDocument(cfg), nil
	}
	if cfg.ListsIdentities() {
		return nil, errors.New(settings.EnvRegistryTable + " is set and the configuration document lists keys or tenants: " +
			"with a table, the table is the registry; create them there (bucketgate keys create) and remove them from the document")
	}
	client, err := registry.NewClient(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", settings.EnvRegistryTable, s.RegistryTable, err)
	}
	return registry.NewCache(registry.NewTable(client, s.RegistryTable), cfg, RegistryOptions(s, log)), nil
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

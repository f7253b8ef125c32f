package test

import (
	"context"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StaleCache is a manager's cache that holds old copies of some objects:
// every read of one answers its held copy, read after read, as a cache
// whose watch is behind the object's heartbeats or another writer's
// changes does. Every other read, and every write, goes to Client. Tests
// of writes that must not depend on a fresh cache (optimistic.Patch's
// callers) read through it.
type StaleCache struct {
	client.Client
	// Held are the copies answered, each for reads of its own type and key.
	Held []client.Object
}

func (c StaleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	for _, held := range c.Held {
		if reflect.TypeOf(held) == reflect.TypeOf(obj) && client.ObjectKeyFromObject(held) == key {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(held.DeepCopyObject()).Elem())
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

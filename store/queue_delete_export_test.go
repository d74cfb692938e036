package store

import "context"

// DeleteQueueBatched is DeleteQueue with chosen batch sizes.
func (s *Store) DeleteQueueBatched(ctx context.Context, tenant, name string, segBatch, keyBatch int) (bool, error) {
	return s.deleteQueue(ctx, tenant, name, segBatch, keyBatch)
}

// DetachQueueOnly does DeleteQueue's first op only, leaving what a crash
// right after it would leave.
func (s *Store) DetachQueueOnly(ctx context.Context, tenant, name string) (bool, error) {
	return s.detachQueue(ctx, tenant, name)
}

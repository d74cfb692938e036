package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/comb-broker/comb/combtype"
)

// Maintenance mode.
//
// Push maintenance parks every push in a durable buffer (answered
// "buffered", invisible to pops); switching it off drains the buffer into
// the log in order, deduplicated by transactionId, exactly once. Pop
// maintenance answers every pop with nothing at once. Both switches are
// stored in the database, so a restart keeps the mode.

// Setting keys of the maintenance switches.
const (
	settingPushMaintenance = "maintenance.push"
	settingPopMaintenance  = "maintenance.pop"
)

// drainBatch is how many buffered pushes one drain op appends: large
// enough to amortise a commit, small enough to keep pushes interleaving.
const drainBatch = 512

// maintenance holds the switches.
type maintenance struct {
	// switchMu makes switching one operation at a time.
	switchMu sync.Mutex

	// A buffered push holds mu for reading from the moment it sees push
	// set until its rows are durable, so whoever takes mu for writing knows
	// no buffered push is in flight: switching off drains the last rows and
	// clears push under it, and nothing can be left behind in the buffer.
	mu     sync.RWMutex
	push   bool
	fast   atomic.Bool   // == push; read without the lock on every push
	pop    bool          // under mu
	popped chan struct{} // under mu; closed while pop maintenance is on
}

// MaintenanceState is the state of both switches.
type MaintenanceState struct {
	// PushMaintenance is on while pushes are parked in the buffer.
	PushMaintenance bool
	// PopMaintenance is on while every pop answers nothing.
	PopMaintenance bool
	// Buffered is the number of parked pushes not yet in the log.
	Buffered int64
}

func (m *maintenance) init() {
	m.popped = make(chan struct{})
}

// popPaused returns a channel that is closed while pop maintenance is on.
func (m *maintenance) popPaused() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.popped
}

func (m *maintenance) popOn() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pop
}

// Lock should be held.
func (m *maintenance) setPop(on bool) {
	if on == m.pop {
		return
	}
	m.pop = on
	if on {
		close(m.popped)
	} else {
		m.popped = make(chan struct{})
	}
}

// loadMaintenance restores the switches stored by an earlier run.
func (b *Broker) loadMaintenance(ctx context.Context) error {
	b.maint.init()
	push, _, err := b.st.Setting(ctx, settingPushMaintenance)
	if err != nil {
		return err
	}
	pop, _, err := b.st.Setting(ctx, settingPopMaintenance)
	if err != nil {
		return err
	}
	b.maint.push = push == "true"
	b.maint.fast.Store(b.maint.push)
	b.maint.setPop(pop == "true")
	if !b.maint.push {
		// Switching off drains and clears the flag in one commit, so rows
		// are left only by a database written some other way; deliver them.
		return b.drainBuffer(ctx, nil)
	}
	return nil
}

// pushBuffered parks items when push maintenance is on; ok is false, and
// nothing was done, when it is off.
func (b *Broker) pushBuffered(ctx context.Context, items []combtype.PushItem) (results []combtype.PushResult, ok bool, err error) {
	if !b.maint.fast.Load() {
		return nil, false, nil
	}
	b.maint.mu.RLock()
	defer b.maint.mu.RUnlock()
	if !b.maint.push {
		return nil, false, nil
	}
	results, err = b.st.BufferPush(ctx, b.tenant, items)
	return results, true, err
}

// Maintenance reports both switches and the size of the push buffer, for
// the whole database.
func (b *Broker) Maintenance(ctx context.Context) (MaintenanceState, error) {
	b.maint.mu.RLock()
	st := MaintenanceState{PushMaintenance: b.maint.push, PopMaintenance: b.maint.pop}
	b.maint.mu.RUnlock()
	n, err := b.st.BufferedPushes(ctx)
	st.Buffered = n
	return st, err
}

// MaintenanceSetPush switches push maintenance, for every tenant. Switching it off returns
// once every parked push is in the log; pushes that arrive meanwhile are
// parked behind the others, so the log keeps their order. If ctx ends
// first, maintenance stays on with the rest still parked, and a later
// call finishes the drain.
func (b *Broker) MaintenanceSetPush(ctx context.Context, on bool) (MaintenanceState, error) {
	b.maint.switchMu.Lock()
	defer b.maint.switchMu.Unlock()
	if on {
		b.maint.mu.Lock()
		err := b.st.SetSetting(ctx, settingPushMaintenance, "true")
		if err == nil {
			b.maint.push = true
			b.maint.fast.Store(true)
		}
		b.maint.mu.Unlock()
		if err != nil {
			return MaintenanceState{}, err
		}
		return b.Maintenance(ctx)
	}
	// Drain the bulk while pushes keep parking, then the tail under the
	// write lock, clearing the flag in the commit that empties the buffer.
	for {
		_, left, err := b.st.DrainPushBuffer(ctx, drainBatch, nil)
		if err != nil {
			return MaintenanceState{}, err
		}
		if left <= drainBatch {
			break
		}
	}
	b.maint.mu.Lock()
	err := b.drainBuffer(ctx, map[string]string{settingPushMaintenance: "false"})
	if err == nil {
		b.maint.push = false
		b.maint.fast.Store(false)
	}
	b.maint.mu.Unlock()
	if err != nil {
		return MaintenanceState{}, err
	}
	return b.Maintenance(ctx)
}

// drainBuffer appends every parked push to the log; whenEmpty is stored in
// the commit that empties the buffer.
func (b *Broker) drainBuffer(ctx context.Context, whenEmpty map[string]string) error {
	for {
		_, left, err := b.st.DrainPushBuffer(ctx, drainBatch, whenEmpty)
		if err != nil {
			return fmt.Errorf("drain push buffer: %w", err)
		}
		if left == 0 {
			return nil
		}
	}
}

// MaintenanceSetPop switches pop maintenance, for every tenant. Switching
// it on also answers the pops parked right now.
func (b *Broker) MaintenanceSetPop(ctx context.Context, on bool) (MaintenanceState, error) {
	b.maint.switchMu.Lock()
	defer b.maint.switchMu.Unlock()
	val := "false"
	if on {
		val = "true"
	}
	if err := b.st.SetSetting(ctx, settingPopMaintenance, val); err != nil {
		return MaintenanceState{}, err
	}
	b.maint.mu.Lock()
	b.maint.setPop(on)
	b.maint.mu.Unlock()
	return b.Maintenance(ctx)
}

// pausedPop is the answer to a pop during pop maintenance: nothing.
func pausedPop(group string) *combtype.PopResult {
	if group == "" {
		group = combtype.QueueModeGroup
	}
	return &combtype.PopResult{Group: group}
}

package stress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// Outcome is how one decision came out, as a Record stores it.
type Outcome uint8

// The outcomes of a Record. OutcomeError is a Decide error: the request was refused as
// invalid, never decided.
const (
	OutcomeOK Outcome = iota + 1
	OutcomeLimited
	OutcomeUnavailable
	OutcomeDegraded
	OutcomeError
	outcomeUnknown // a reason this harness does not know: always a violation
)

// outcomeOf maps a guard result (or error) to its Outcome.
func outcomeOf(r guard.Result, err error) Outcome {
	if err != nil {
		return OutcomeError
	}
	switch r.Reason {
	case bucketgate.ReasonOK:
		return OutcomeOK
	case bucketgate.ReasonLimited:
		return OutcomeLimited
	case bucketgate.ReasonUnavailable:
		return OutcomeUnavailable
	case bucketgate.ReasonDegraded:
		return OutcomeDegraded
	}
	return outcomeUnknown
}

// Record flags.
const (
	flagAllowed uint8 = 1 << iota
	flagCacheHit
	flagCircuitOpen
)

// failures lists the guard failures a Record can carry, by their code (the index).
var failures = []guard.Failure{guard.FailureNone, guard.FailureTimeout, guard.FailureRedisError, guard.FailureBadResponse}

// failureCode is f's index in failures; an unknown failure gets len(failures).
func failureCode(f guard.Failure) uint8 {
	for i, g := range failures {
		if g == f {
			return uint8(i)
		}
	}
	return uint8(len(failures))
}

// Record is one decision as a worker saw it: what was asked, what came back, and when.
// Times are microseconds since the Unix epoch; Redis runs on the same host as the
// workers, so its TIME and the host clock are one clock.
type Record struct {
	// At is the Redis TIME of the decision (Decision.At); zero when Redis did not decide.
	At int64
	// Start and End are the host clock when Decide was called and when it returned.
	Start, End int64
	// RetryAfter is the decision's retry-after in milliseconds.
	RetryAfter int64
	// Identity indexes the identity within its scenario.
	Identity uint32
	// Remaining is the decision's Remaining.
	Remaining int32
	// Scenario, Shape and Cost say what was asked: the scenario's identity, its
	// Shapes[Shape] rules and this cost.
	Scenario, Shape, Cost uint8
	// Instance indexes the production chain (the stand-in Lambda instance) within its
	// worker; Worker is set by the reader, not stored.
	Instance, Worker uint8
	// Outcome is how the decision came out; Failure is the guard.Failure's code.
	Outcome, Failure uint8
	// Flags: allowed, deny-cache hit, circuit open.
	Flags uint8
}

// recordSize is the encoded size of a Record, in bytes.
const recordSize = 4*8 + 4 + 4 + 7

// Allowed reports whether the decision allowed the request.
func (r Record) Allowed() bool { return r.Flags&flagAllowed != 0 }

// CacheHit reports whether the deny cache answered without Redis.
func (r Record) CacheHit() bool { return r.Flags&flagCacheHit != 0 }

// CircuitOpen reports whether the circuit breaker answered without Redis.
func (r Record) CircuitOpen() bool { return r.Flags&flagCircuitOpen != 0 }

// Decided reports whether Redis decided this request: a decision with a Redis time.
func (r Record) Decided() bool {
	return Outcome(r.Outcome) == OutcomeOK || Outcome(r.Outcome) == OutcomeLimited && !r.CacheHit()
}

// Sent reports whether the request may have reached Redis without the worker learning
// its outcome: a failure that was not the circuit breaker's answer.
func (r Record) Sent() bool {
	return Outcome(r.Outcome) == OutcomeUnavailable && !r.CircuitOpen()
}

// newRecord makes the Record of one decision.
func newRecord(start, end time.Time, res guard.Result, err error) Record {
	rec := Record{
		Start:   start.UnixMicro(),
		End:     end.UnixMicro(),
		Outcome: uint8(outcomeOf(res, err)),
		Failure: failureCode(res.Failure),
	}
	if err != nil {
		return rec
	}
	if !res.At.IsZero() && !res.CacheHit {
		rec.At = res.At.UnixMicro()
	}
	rec.RetryAfter = res.RetryAfter.Milliseconds()
	rec.Remaining = int32(min(res.Remaining, bucketgate.MaxCapacity))
	if res.Allowed {
		rec.Flags |= flagAllowed
	}
	if res.CacheHit {
		rec.Flags |= flagCacheHit
	}
	if res.CircuitOpen {
		rec.Flags |= flagCircuitOpen
	}
	return rec
}

// appendRecord appends r's encoding to b.
func appendRecord(b []byte, r Record) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(r.At))
	b = le.AppendUint64(b, uint64(r.Start))
	b = le.AppendUint64(b, uint64(r.End))
	b = le.AppendUint64(b, uint64(r.RetryAfter))
	b = le.AppendUint32(b, r.Identity)
	b = le.AppendUint32(b, uint32(r.Remaining))
	return append(b, r.Scenario, r.Shape, r.Cost, r.Instance, r.Outcome, r.Failure, r.Flags)
}

// decodeRecord decodes one record from the first recordSize bytes of b.
func decodeRecord(b []byte) Record {
	le := binary.LittleEndian
	return Record{
		At:         int64(le.Uint64(b[0:])),
		Start:      int64(le.Uint64(b[8:])),
		End:        int64(le.Uint64(b[16:])),
		RetryAfter: int64(le.Uint64(b[24:])),
		Identity:   le.Uint32(b[32:]),
		Remaining:  int32(le.Uint32(b[36:])),
		Scenario:   b[40], Shape: b[41], Cost: b[42], Instance: b[43],
		Outcome: b[44], Failure: b[45], Flags: b[46],
	}
}

// batchRecords is how many records a goroutine buffers before it writes them out.
const batchRecords = 1024

// recordFile is a worker's records file, written by many goroutines, each through its
// own batch, so that memory stays flat however long the worker runs.
type recordFile struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error
}

// createRecordFile creates the records file at path.
func createRecordFile(path string) (*recordFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	return &recordFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// batch is one goroutine's buffer of encoded records.
type batch struct {
	file *recordFile
	buf  []byte
}

// batch returns a new, empty batch writing to rf.
func (rf *recordFile) batch() *batch {
	return &batch{file: rf, buf: make([]byte, 0, batchRecords*recordSize)}
}

// add buffers r, writing the buffer out when it is full.
func (b *batch) add(r Record) {
	b.buf = appendRecord(b.buf, r)
	if len(b.buf) >= batchRecords*recordSize {
		b.flush()
	}
}

// flush writes the buffered records to the file.
func (b *batch) flush() {
	b.file.mu.Lock()
	defer b.file.mu.Unlock()
	if _, err := b.file.w.Write(b.buf); err != nil && b.file.err == nil {
		b.file.err = err
	}
	b.buf = b.buf[:0]
}

// Close flushes and closes the file, and returns the first write error.
func (rf *recordFile) Close() error {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	err := errors.Join(rf.err, rf.w.Flush(), rf.f.Close())
	if err != nil {
		return fmt.Errorf("records %s: %w", rf.f.Name(), err)
	}
	return nil
}

// readRecords reads every record of r, setting each one's Worker to worker.
func readRecords(r io.Reader, worker uint8) ([]Record, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	if len(data)%recordSize != 0 {
		return nil, fmt.Errorf("records: %d bytes is not a whole number of %d-byte records", len(data), recordSize)
	}
	recs := make([]Record, 0, len(data)/recordSize)
	for off := 0; off < len(data); off += recordSize {
		rec := decodeRecord(data[off:])
		rec.Worker = worker
		recs = append(recs, rec)
	}
	return recs, nil
}

// readRecordsFile reads the records file at path, setting each record's Worker.
func readRecordsFile(path string, worker uint8) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	defer f.Close()
	return readRecords(f, worker)
}

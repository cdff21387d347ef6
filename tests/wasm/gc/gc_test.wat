;; Fixture for tests/wasm/test_gc.c: collector, handles, memory cap, host GC API,
;; tail calls and deep recursion. Regenerate gc_test.wasm with build.mjs.
(module
  (rec
    (type $pair (struct (field $a (mut i64)) (field $b (mut (ref null $pair))))))
  (type $bytes (array (mut i8)))
  (type $tuple (array (mut (ref null $pair))))
  (type $wrap_t (func (param (ref $pair)) (result (ref $pair))))
  (import "host" "wrap" (func $wrap (type $wrap_t)))

  ;; Exported so the host can learn the type indices the assembler chose.
  (global (export "pair_type") (mut (ref null $pair)) (ref.null $pair))
  (global (export "bytes_type") (mut (ref null $bytes)) (ref.null $bytes))
  (global $keep (mut (ref null $tuple)) (ref.null $tuple))
  (global $cyc (mut (ref null $pair)) (ref.null $pair))

  ;; n short-lived structs with a live set of `keep` structs held in an array:
  ;; slot i % keep is replaced each iteration. Returns the sum of field a read back.
  (func (export "churn") (param $n i32) (param $keep i32) (result i64)
    (local $i i32) (local $sum i64) (local $p (ref null $pair)) (local $t (ref $tuple))
    (local.set $t (array.new_default $tuple (local.get $keep)))
    (global.set $keep (local.get $t))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $p (struct.new $pair (i64.extend_i32_u (local.get $i)) (ref.null $pair)))
        (array.set $tuple (local.get $t) (i32.rem_u (local.get $i) (local.get $keep))
                   (local.get $p))
        (local.set $sum (i64.add (local.get $sum) (struct.get $pair $a (local.get $p))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $sum))

  (func (export "drop_keep") (global.set $keep (ref.null $tuple)))

  ;; A two-object cycle reachable only from a global.
  (func (export "make_cycle")
    (local $x (ref $pair)) (local $y (ref $pair))
    (local.set $x (struct.new $pair (i64.const 1) (ref.null $pair)))
    (local.set $y (struct.new $pair (i64.const 2) (local.get $x)))
    (struct.set $pair $b (local.get $x) (local.get $y))
    (global.set $cyc (local.get $x)))
  (func (export "drop_cycle") (global.set $cyc (ref.null $pair)))
  (func (export "cycle_sum") (result i64)
    (local $x (ref $pair))
    (local.set $x (ref.as_non_null (global.get $cyc)))
    (i64.add (struct.get $pair $a (local.get $x))
             (struct.get $pair $a (ref.as_non_null (struct.get $pair $b (local.get $x))))))

  (func (export "new_pair") (param $a i64) (result (ref $pair))
    (struct.new $pair (local.get $a) (ref.null $pair)))
  (func (export "pair_a") (param $p (ref null $pair)) (result i64)
    (struct.get $pair $a (local.get $p)))
  (func (export "bytes_sum") (param $b (ref null $bytes)) (result i32)
    (local $i i32) (local $s i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (array.len (local.get $b))))
        (local.set $s (i32.add (local.get $s) (array.get_u $bytes (local.get $b) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $s))

  ;; Keeps everything alive: a list that grows until the memory cap stops it.
  (func (export "hoard") (result i32)
    (local $p (ref null $pair)) (local $i i32)
    (loop $l
      (local.set $p (struct.new $pair (i64.extend_i32_u (local.get $i)) (local.get $p)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l))
    (unreachable))

  ;; Calls the host, which allocates (and collects) while holding only its argument.
  (func (export "call_wrap") (param $a i64) (result i64)
    (local $p (ref $pair)) (local $q (ref $pair))
    (local.set $p (struct.new $pair (local.get $a) (ref.null $pair)))
    (local.set $q (call $wrap (local.get $p)))
    (i64.add (struct.get $pair $a (local.get $q))
             (struct.get $pair $a (ref.as_non_null (struct.get $pair $b (local.get $q))))))

  ;; Exception packages are GC objects too: n throws, each caught, payload read back.
  (tag $boom (param (ref $pair)))
  (func (export "throw_loop") (param $n i32) (result i64)
    (local $i i32) (local $sum i64)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $sum
          (i64.add (local.get $sum)
            (struct.get $pair $a
              (block $h (result (ref $pair))
                (try_table (catch $boom $h)
                  (throw $boom (struct.new $pair (i64.extend_i32_u (local.get $i))
                                                 (ref.null $pair))))
                (unreachable)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $sum))

  ;; 10^8 tail calls must run in constant stack space.
  (func $count (export "count") (param $n i64) (param $acc i64) (result i64)
    (if (result i64) (i64.eqz (local.get $n))
      (then (local.get $acc))
      (else (return_call $count (i64.sub (local.get $n) (i64.const 1))
                                (i64.add (local.get $acc) (i64.const 1))))))

  ;; Non-tail recursion carrying a growing list: deep frames full of references.
  (func $deep (export "deep") (param $n i32) (param $p (ref null $pair)) (result i64)
    (local $q (ref $pair))
    (local.set $q (struct.new $pair (i64.extend_i32_u (local.get $n)) (local.get $p)))
    ;; garbage too, so that collections happen during the descent
    (drop (struct.new $pair (i64.const 0) (local.get $q)))
    (drop (struct.new $pair (i64.const 0) (local.get $q)))
    (if (result i64) (i32.eqz (local.get $n))
      (then (struct.get $pair $a (local.get $q)))
      (else (i64.add (call $deep (i32.sub (local.get $n) (i32.const 1)) (local.get $q))
                     (struct.get $pair $a (local.get $q))))))
)

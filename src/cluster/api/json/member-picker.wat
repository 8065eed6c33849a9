;; The member picker's scanner (see member-picker.ts): finds where a JSON object ends and copies
;; the members whose names are in a table into a smaller JSON object, without decoding anything.
;; The same loop in JavaScript runs at about half the speed: this one sees every byte of a
;; /jobs response (half a gigabyte at 100k jobs).
;;
;; Memory layout, in bytes:
;;   [0, 8192)       name table: 1024 slots of (offset, length) of a name; offset 0 = empty slot
;;   [8192, 65536)   the names' bytes, written by the caller
;;   [65536, ...)    the input (the caller copies it here), then the output after it
(module
  (memory (export "memory") 2)
  (global (export "namesBase") i32 (i32.const 8192))
  (global (export "inputBase") i32 (i32.const 65536))
  ;; Where the output starts (set by the caller past its input) and how long the last one is.
  (global $out (mut i32) (i32.const 0))
  (global $outLength (mut i32) (i32.const 0))
  ;; Whether the empty name is wanted (an empty name has no first or last byte to hash).
  (global $wantsEmpty (mut i32) (i32.const 0))

  (func (export "setOutput") (param $at i32) (global.set $out (local.get $at)))
  (func (export "outLength") (result i32) (global.get $outLength))

  ;; A name's slot: its length and its first and last bytes, so that scanning a key does no
  ;; arithmetic per byte; names agreeing on all three are compared byte by byte.
  (func $slot (param $at i32) (param $length i32) (result i32)
    (i32.and
      (i32.add
        (i32.add (i32.mul (local.get $length) (i32.const 7))
                 (i32.mul (i32.load8_u (local.get $at)) (i32.const 3)))
        (i32.load8_u (i32.sub (i32.add (local.get $at) (local.get $length)) (i32.const 1))))
      (i32.const 1023)))

  ;; Adds the name whose bytes the caller wrote at $at; linear probing from its slot.
  (func (export "addName") (param $at i32) (param $length i32)
    (local $s i32)
    (if (i32.eqz (local.get $length))
      (then (global.set $wantsEmpty (i32.const 1)) (return)))
    (local.set $s (call $slot (local.get $at) (local.get $length)))
    (block $free
      (loop $probe
        (br_if $free (i32.eqz (i32.load (i32.shl (local.get $s) (i32.const 3)))))
        (local.set $s (i32.and (i32.add (local.get $s) (i32.const 1)) (i32.const 1023)))
        (br $probe)))
    (i32.store (i32.shl (local.get $s) (i32.const 3)) (local.get $at))
    (i32.store (i32.add (i32.shl (local.get $s) (i32.const 3)) (i32.const 4)) (local.get $length)))

  ;; Whether the key bytes [$from, $to) are one of the names.
  (func $has (param $from i32) (param $to i32) (result i32)
    (local $length i32) (local $s i32) (local $name i32) (local $k i32)
    (local.set $length (i32.sub (local.get $to) (local.get $from)))
    (if (i32.eqz (local.get $length)) (then (return (global.get $wantsEmpty))))
    (local.set $s (call $slot (local.get $from) (local.get $length)))
    (loop $probe
      (local.set $name (i32.load (i32.shl (local.get $s) (i32.const 3))))
      (if (i32.eqz (local.get $name)) (then (return (i32.const 0))))
      (if (i32.eq (i32.load (i32.add (i32.shl (local.get $s) (i32.const 3)) (i32.const 4))) (local.get $length))
        (then
          (local.set $k (i32.const 0))
          (block $differ
            (loop $compare
              (if (i32.eq (local.get $k) (local.get $length)) (then (return (i32.const 1))))
              (br_if $differ
                (i32.ne (i32.load8_u (i32.add (local.get $name) (local.get $k)))
                        (i32.load8_u (i32.add (local.get $from) (local.get $k)))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $compare)))))
      (local.set $s (i32.and (i32.add (local.get $s) (i32.const 1)) (i32.const 1023)))
      (br $probe))
    (i32.const 0))

  (func $isWhitespace (param $c i32) (result i32)
    (i32.or
      (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x0a)))
      (i32.or (i32.eq (local.get $c) (i32.const 0x0d)) (i32.eq (local.get $c) (i32.const 0x09)))))

  (func $skipWhitespace (param $i i32) (param $end i32) (result i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (br_if $done (i32.eqz (call $isWhitespace (i32.load8_u (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $i))

  ;; Index just past the string whose opening quote is before $i, or -1 when it does not end
  ;; before $end. A backslash escapes the byte after it.
  (func $skipString (param $i i32) (param $end i32) (result i32)
    (local $c i32)
    (loop $next
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -1))))
      (local.set $c (i32.load8_u (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (if (i32.eq (local.get $c) (i32.const 0x22)) (then (return (local.get $i))))
      (if (i32.eq (local.get $c) (i32.const 0x5c))
        (then (local.set $i (i32.add (local.get $i) (i32.const 1)))))
      (br $next))
    (i32.const -1))

  ;; Index just past the value starting at $i, or -1 when it does not end before $end. A
  ;; container is followed by string state and bracket depth only; a scalar (number, true,
  ;; false, null) ends at the first delimiter and may not hold a quote or a bracket.
  (func $skipValue (param $i i32) (param $end i32) (result i32)
    (local $c i32) (local $depth i32) (local $start i32)
    (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -1))))
    (local.set $c (i32.load8_u (local.get $i)))
    (if (i32.eq (local.get $c) (i32.const 0x22))
      (then (return (call $skipString (i32.add (local.get $i) (i32.const 1)) (local.get $end)))))
    ;; "{" 0x7b and "[" 0x5b differ in bit 0x20 only; so do "}" 0x7d and "]" 0x5d.
    (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b))
      (then
        (local.set $depth (i32.const 1))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (loop $next
          (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -1))))
          (local.set $c (i32.load8_u (local.get $i)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (if (i32.eq (local.get $c) (i32.const 0x22))
            (then
              (local.set $i (call $skipString (local.get $i) (local.get $end)))
              (if (i32.lt_s (local.get $i) (i32.const 0)) (then (return (i32.const -1))))
              (br $next)))
          (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b))
            (then (local.set $depth (i32.add (local.get $depth) (i32.const 1))) (br $next)))
          (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7d))
            (then
              (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
              (if (i32.eqz (local.get $depth)) (then (return (local.get $i))))))
          (br $next))))
    (local.set $start (local.get $i))
    (block $delimited
      (loop $next
        (br_if $delimited (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $i)))
        (br_if $delimited (i32.eq (local.get $c) (i32.const 0x2c)))
        (br_if $delimited (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7d)))
        (br_if $delimited (call $isWhitespace (local.get $c)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 0x22))
                    (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b)))
          (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (if (result i32) (i32.and (i32.gt_u (local.get $i) (local.get $start)) (i32.lt_u (local.get $i) (local.get $end)))
      (then (local.get $i))
      (else (i32.const -1))))

  ;; Scans the object whose "{" is at $start, copying the wanted members to the output. Returns
  ;; the index just past its "}", or -1 when it does not end before $limit or is not an object
  ;; this scanner reads (then the output is not to be used).
  (func (export "scan") (param $start i32) (param $limit i32) (result i32)
    (local $i i32) (local $o i32) (local $c i32) (local $keyStart i32) (local $keyEnd i32)
    (local $valueEnd i32) (local $escaped i32) (local $size i32)
    (if (i32.ge_u (local.get $start) (local.get $limit)) (then (return (i32.const -1))))
    (if (i32.ne (i32.load8_u (local.get $start)) (i32.const 0x7b)) (then (return (i32.const -1))))
    (local.set $o (global.get $out))
    (i32.store8 (local.get $o) (i32.const 0x7b))
    (local.set $o (i32.add (local.get $o) (i32.const 1)))
    (local.set $i (call $skipWhitespace (i32.add (local.get $start) (i32.const 1)) (local.get $limit)))
    (if (i32.ge_u (local.get $i) (local.get $limit)) (then (return (i32.const -1))))
    (block $closed
      (if (i32.eq (i32.load8_u (local.get $i)) (i32.const 0x7d))
        (then (local.set $i (i32.add (local.get $i) (i32.const 1))) (br $closed)))
      (loop $member
        ;; The key: its bytes are compared raw, so one written with escapes is always kept.
        (if (i32.ge_u (local.get $i) (local.get $limit)) (then (return (i32.const -1))))
        (if (i32.ne (i32.load8_u (local.get $i)) (i32.const 0x22)) (then (return (i32.const -1))))
        (local.set $keyStart (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $escaped (i32.const 0))
        (block $keyDone
          (loop $keyByte
            (if (i32.ge_u (local.get $i) (local.get $limit)) (then (return (i32.const -1))))
            (local.set $c (i32.load8_u (local.get $i)))
            (br_if $keyDone (i32.eq (local.get $c) (i32.const 0x22)))
            (if (i32.eq (local.get $c) (i32.const 0x5c))
              (then
                (local.set $escaped (i32.const 1))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $keyByte)))
        (local.set $keyEnd (local.get $i))
        (local.set $i (call $skipWhitespace (i32.add (local.get $i) (i32.const 1)) (local.get $limit)))
        (if (i32.ge_u (local.get $i) (local.get $limit)) (then (return (i32.const -1))))
        (if (i32.ne (i32.load8_u (local.get $i)) (i32.const 0x3a)) (then (return (i32.const -1))))
        (local.set $i (call $skipWhitespace (i32.add (local.get $i) (i32.const 1)) (local.get $limit)))
        (local.set $valueEnd (call $skipValue (local.get $i) (local.get $limit)))
        (if (i32.lt_s (local.get $valueEnd) (i32.const 0)) (then (return (i32.const -1))))
        (if (i32.or (local.get $escaped)
                    (call $has (i32.add (local.get $keyStart) (i32.const 1)) (local.get $keyEnd)))
          (then
            (if (i32.gt_u (local.get $o) (i32.add (global.get $out) (i32.const 1)))
              (then
                (i32.store8 (local.get $o) (i32.const 0x2c))
                (local.set $o (i32.add (local.get $o) (i32.const 1)))))
            (local.set $size (i32.sub (local.get $valueEnd) (local.get $keyStart)))
            (memory.copy (local.get $o) (local.get $keyStart) (local.get $size))
            (local.set $o (i32.add (local.get $o) (local.get $size)))))
        (local.set $i (call $skipWhitespace (local.get $valueEnd) (local.get $limit)))
        (if (i32.ge_u (local.get $i) (local.get $limit)) (then (return (i32.const -1))))
        (local.set $c (i32.load8_u (local.get $i)))
        (if (i32.eq (local.get $c) (i32.const 0x2c))
          (then
            (local.set $i (call $skipWhitespace (i32.add (local.get $i) (i32.const 1)) (local.get $limit)))
            (br $member)))
        (if (i32.ne (local.get $c) (i32.const 0x7d)) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))))
    (i32.store8 (local.get $o) (i32.const 0x7d))
    (global.set $outLength (i32.sub (i32.add (local.get $o) (i32.const 1)) (global.get $out)))
    (local.get $i)))

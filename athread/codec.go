package athread

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
)

// Codec packs and unpacks values of type T for threads that move between
// processes: Anahy's pack/unpack functions. Append appends the encoding of
// v to buf; Decode rebuilds a value from exactly the bytes Append wrote.
// Decode must not keep data beyond its return, and must return an error
// (never panic) on bytes it cannot read.
type Codec[T any] interface {
	Append(buf []byte, v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// CodecFuncs makes a Codec from two functions.
func CodecFuncs[T any](appendFn func(buf []byte, v T) ([]byte, error), decode func(data []byte) (T, error)) Codec[T] {
	return funcCodec[T]{appendFn, decode}
}

type funcCodec[T any] struct {
	a func([]byte, T) ([]byte, error)
	d func([]byte) (T, error)
}

func (c funcCodec[T]) Append(buf []byte, v T) ([]byte, error) { return c.a(buf, v) }
func (c funcCodec[T]) Decode(data []byte) (T, error)          { return c.d(data) }

// Fixed is the codec of a fixed-size value (numbers, bools, arrays and
// structs of them, as encoding/binary sees them) in little-endian order.
// It panics if T has no fixed size; int and uint are encoded as 64 bits.
func Fixed[T any]() Codec[T] {
	var z T
	switch any(z).(type) {
	case int:
		return any(intCodec{}).(Codec[T])
	case uint:
		return any(uintCodec{}).(Codec[T])
	}
	n := binary.Size(z)
	if n < 0 {
		panic(fmt.Sprintf("athread: %T has no fixed size", z))
	}
	return fixedCodec[T]{size: n}
}

type fixedCodec[T any] struct{ size int }

func (c fixedCodec[T]) Append(buf []byte, v T) ([]byte, error) {
	return binary.Append(buf, binary.LittleEndian, v)
}

func (c fixedCodec[T]) Decode(data []byte) (T, error) {
	var v T
	if len(data) != c.size {
		return v, fmt.Errorf("athread: %T needs %d bytes, got %d", v, c.size, len(data))
	}
	_, err := binary.Decode(data, binary.LittleEndian, &v)
	return v, err
}

type intCodec struct{}

func (intCodec) Append(buf []byte, v int) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(buf, uint64(v)), nil
}

func (intCodec) Decode(data []byte) (int, error) {
	if len(data) != 8 {
		return 0, fmt.Errorf("athread: int needs 8 bytes, got %d", len(data))
	}
	return int(binary.LittleEndian.Uint64(data)), nil
}

type uintCodec struct{}

func (uintCodec) Append(buf []byte, v uint) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(buf, uint64(v)), nil
}

func (uintCodec) Decode(data []byte) (uint, error) {
	if len(data) != 8 {
		return 0, fmt.Errorf("athread: uint needs 8 bytes, got %d", len(data))
	}
	return uint(binary.LittleEndian.Uint64(data)), nil
}

// Bytes is the codec of a []byte, sent as is.
func Bytes() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Append(buf []byte, v []byte) ([]byte, error) { return append(buf, v...), nil }
func (bytesCodec) Decode(data []byte) ([]byte, error)          { return bytes.Clone(data), nil }

// String is the codec of a string.
func String() Codec[string] { return stringCodec{} }

type stringCodec struct{}

func (stringCodec) Append(buf []byte, v string) ([]byte, error) { return append(buf, v...), nil }
func (stringCodec) Decode(data []byte) (string, error)          { return string(data), nil }

// None is the codec of struct{}, for threads without input or output.
func None() Codec[struct{}] { return noneCodec{} }

type noneCodec struct{}

func (noneCodec) Append(buf []byte, _ struct{}) ([]byte, error) { return buf, nil }
func (noneCodec) Decode(data []byte) (struct{}, error) {
	if len(data) != 0 {
		return struct{}{}, errors.New("athread: unexpected bytes for struct{}")
	}
	return struct{}{}, nil
}

// Binary is the codec of a type whose pointer implements
// encoding.BinaryMarshaler and encoding.BinaryUnmarshaler.
func Binary[T any, PT interface {
	*T
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}]() Codec[T] {
	return binaryCodec[T, PT]{}
}

type binaryCodec[T any, PT interface {
	*T
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}] struct{}

func (binaryCodec[T, PT]) Append(buf []byte, v T) ([]byte, error) {
	b, err := PT(&v).MarshalBinary()
	if err != nil {
		return buf, err
	}
	return append(buf, b...), nil
}

func (binaryCodec[T, PT]) Decode(data []byte) (T, error) {
	var v T
	err := PT(&v).UnmarshalBinary(data)
	return v, err
}

// Gob is the codec of any type encoding/gob handles (slower and larger
// than the others; convenient for structured values).
func Gob[T any]() Codec[T] { return gobCodec[T]{} }

type gobCodec[T any] struct{}

func (gobCodec[T]) Append(buf []byte, v T) ([]byte, error) {
	w := bytes.NewBuffer(buf)
	err := gob.NewEncoder(w).Encode(&v)
	return w.Bytes(), err
}

func (gobCodec[T]) Decode(data []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(data)).Decode(&v)
	return v, err
}

// codecName names a codec for the registration check.
func codecName(c any) string {
	if c == nil {
		return "<nil>"
	}
	return reflect.TypeOf(c).String()
}

// Package kmsgtest holds checks the Kafka API tests of several packages
// share.
package kmsgtest

import "reflect"

// ErrorCodes returns every ErrorCode field of a kmsg response, depth first:
// the slots an error response must fill.
func ErrorCodes(resp any) []int16 {
	var out []int16
	collect(reflect.ValueOf(resp), &out)
	return out
}

func collect(v reflect.Value, out *[]int16) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			collect(v.Elem(), out)
		}
	case reflect.Slice:
		for i := range v.Len() {
			collect(v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "ErrorCode" {
				*out = append(*out, int16(v.Field(i).Int()))
				continue
			}
			collect(v.Field(i), out)
		}
	}
}

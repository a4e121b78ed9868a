package quota

import (
	"cmp"
	"slices"
	"unicode/utf16"
)

// Kafka lists the entities of its client-quota answers, their components
// and their values in java.util.HashMap order: its broker describes them
// from HashMaps (ClientQuotasImage, ClientQuotaImage, ClientQuotaEntity)
// and its controller answers AlterClientQuotas from one
// (ClientQuotaControlManager). Clients compare whole answers
// (@platformatic/kafka's tests deep-equal them with Kafka's), so kaas
// answers in that order, which is fixed for given keys: a HashMap iterates
// its table bucket by bucket, a key's bucket being its spread hashCode
// masked to the table size, and one bucket's keys in the order they were
// put. Entity types come client-id, user (ip alone); producer_byte_rate,
// consumer_byte_rate and request_percentage, set in one change, come
// consumer_byte_rate, request_percentage, producer_byte_rate.

// InKafkaOrder sorts items as a HashMap made with initial capacity
// initial (16 is `new HashMap<>()`) iterates them once they were put into
// it in their current order, each under the hashCode hash gives it.
func InKafkaOrder[T any](items []T, hash func(T) int32, initial int) {
	size := 1 // the table doubles when a put takes it over 3/4 full
	for size < initial {
		size <<= 1
	}
	for len(items) > size*3/4 {
		size <<= 1
	}
	bucket := func(it T) uint32 {
		h := uint32(hash(it))
		return (h ^ h>>16) & uint32(size-1)
	}
	slices.SortStableFunc(items, func(a, b T) int { return cmp.Compare(bucket(a), bucket(b)) })
}

// JavaHash is Java's String.hashCode.
func JavaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// EntityHash is the hashCode of Kafka's ClientQuotaEntity of components
// cs (Objects.hash of its type-to-name map; a default's name is null).
func EntityHash(cs []Component) int32 {
	var sum int32
	for _, c := range cs {
		var name int32
		if c.Name != nil {
			name = JavaHash(*c.Name)
		}
		sum += JavaHash(c.Type) ^ name
	}
	return 31 + sum
}

func componentHash(c Component) int32 { return JavaHash(c.Type) }

// SortedKeys are v's keys in the order Kafka describes them: put, in the
// order of the change that set them (a HashMap), into an empty HashMap
// (ClientQuotaDelta.apply).
func (v Values) SortedKeys() []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	InKafkaOrder(keys, JavaHash, 16)
	InKafkaOrder(keys, JavaHash, 0)
	return keys
}

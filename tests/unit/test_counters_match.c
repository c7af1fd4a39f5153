/* The device counters' match of a counter source's devices to the GPU
 * backend's device ids: by the "uuid" of each deviceProperties object, read
 * as JSON (a UUID elsewhere in the text, or keys in another order, neither
 * fools nor stops it), else by index. */
#include "testutil.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/counters/sampler.h"

#define UUID_A "GPU-00112233-4455-6677-8899-aabbccddeeff"
#define UUID_B "GPU-ffeeddcc-bbaa-9988-7766-554433221100"

/* Two source devices: 0 has UUID_A, 1 has UUID_B. */
static void two_devices(struct strb_counter_device dev[2])
{
	memset(dev, 0, 2 * sizeof(dev[0]));
	assert_true(strb_counters_parse_uuid(UUID_A, dev[0].uuid));
	assert_true(strb_counters_parse_uuid(UUID_B, dev[1].uuid));
	dev[0].uuid_known = dev[1].uuid_known = true;
}

static void match(const char *props, int64_t id[2], bool by_uuid[2])
{
	struct strb_counter_device dev[2];
	two_devices(dev);
	strb_counters_match(props, dev, 2, id, by_uuid);
}

static void test_parse_uuid(void **state)
{
	(void)state;
	unsigned char b[16], want[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
	                                 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
	assert_true(strb_counters_parse_uuid(UUID_A, b));
	assert_memory_equal(b, want, 16);
	assert_true(strb_counters_parse_uuid("GPU-00112233-4455-6677-8899-AABBCCDDEEFF", b));
	assert_memory_equal(b, want, 16);
	assert_false(strb_counters_parse_uuid("MIG-00112233-4455-6677-8899-aabbccddeeff", b));
	assert_false(strb_counters_parse_uuid("GPU-00112233-4455-6677-8899-aabbccddee", b));
	assert_false(strb_counters_parse_uuid("GPU-00112233-4455-6677-8899-aabbccddeexx", b));
}

static void test_matched_by_uuid(void **state)
{
	(void)state;
	int64_t id[2];
	bool by_uuid[2];
	match("{\"id\": 0, \"name\": \"x\", \"uuid\": \"" UUID_B "\"}, "
	      "{\"id\": 1, \"name\": \"y\", \"uuid\": \"" UUID_A "\"}",
	      id, by_uuid);
	assert_int_equal(id[0], 1);
	assert_int_equal(id[1], 0);
	assert_true(by_uuid[0] && by_uuid[1]);
}

/* A UUID inside another member (a nested object before the device's own
 * "uuid") is not the device's; a search of the text took the first one. */
static void test_uuid_in_another_member_is_not_the_devices(void **state)
{
	(void)state;
	int64_t id[2];
	bool by_uuid[2];
	match("{\"id\": 5, \"peer\": {\"uuid\": \"" UUID_B "\"}, \"uuid\": \"" UUID_A "\"}", id, by_uuid);
	assert_int_equal(id[0], 5);
	assert_true(by_uuid[0]);
	assert_int_equal(id[1], 1); /* UUID_B is no device's own: by index */
	assert_false(by_uuid[1]);
}

/* JSON's freedom: keys in any order, no spaces, strings that look like keys. */
static void test_any_key_order_and_spacing(void **state)
{
	(void)state;
	int64_t id[2];
	bool by_uuid[2];
	match("{\"name\":\"{\\\"id\\\": 9, \\\"uuid\\\": \\\"" UUID_A "\\\"}\",\"uuid\":\"" UUID_B
	      "\",\"id\":7}",
	      id, by_uuid);
	assert_int_equal(id[1], 7);
	assert_true(by_uuid[1]);
	assert_int_equal(id[0], 0);
	assert_false(by_uuid[0]);
}

static void test_no_or_bad_properties_match_by_index(void **state)
{
	(void)state;
	const char *props[] = {NULL, "", "{\"id\": 0, \"uuid\": \"" UUID_B "\"",
	                       "{\"id\": \"0\", \"uuid\": \"" UUID_B "\"}"};
	for (size_t k = 0; k < sizeof(props) / sizeof(props[0]); k++) {
		int64_t id[2] = {-1, -1};
		bool by_uuid[2] = {true, true};
		match(props[k], id, by_uuid);
		assert_int_equal(id[0], 0);
		assert_int_equal(id[1], 1);
		assert_false(by_uuid[0] || by_uuid[1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_uuid),
	    cmocka_unit_test(test_matched_by_uuid),
	    cmocka_unit_test(test_uuid_in_another_member_is_not_the_devices),
	    cmocka_unit_test(test_any_key_order_and_spacing),
	    cmocka_unit_test(test_no_or_bad_properties_match_by_index),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

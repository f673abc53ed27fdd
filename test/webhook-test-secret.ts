// The webhook signing secret of the test stack: the agent project's WEBHOOK_SECRET binding and the
// mock model's webhook endpoint share it. Tests only.
export const WEBHOOK_TEST_SECRET = "whsec_test_5e2c1f9a";
/** The tenant whose swarms call the mock's webhook in the agent tests: the mock verifies with its key. */
export const WEBHOOK_TEST_TENANT = "tk_agent_loop";

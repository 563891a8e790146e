DROP TABLE IF EXISTS "ob_component_state";

DROP TABLE IF EXISTS "ob_step_partition";

DROP TABLE IF EXISTS "ob_retention_action";

DROP TABLE IF EXISTS "ob_operator_request";

DROP TABLE IF EXISTS "ob_flow_decision";

DROP TABLE IF EXISTS "ob_recovery_decision";

DROP TABLE IF EXISTS "ob_step_execution";

DROP TABLE IF EXISTS "ob_job_execution";

DROP TABLE IF EXISTS "ob_job_instance";

DROP TABLE IF EXISTS "ob_definition_upgrade";

DROP TABLE IF EXISTS "ob_job_definition";

DROP TABLE IF EXISTS "ob_schema_version";

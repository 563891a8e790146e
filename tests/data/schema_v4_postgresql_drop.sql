DROP TABLE IF EXISTS oxide_batch.ob_component_state CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_step_partition CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_retention_action CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_operator_request CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_flow_decision CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_recovery_decision CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_step_execution CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_job_execution CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_job_instance CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_definition_upgrade CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_job_definition CASCADE;

DROP TABLE IF EXISTS oxide_batch.ob_schema_version CASCADE;

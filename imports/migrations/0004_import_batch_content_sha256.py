from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("imports", "0003_import_batch_plural"),
    ]

    operations = [
        migrations.AddField(
            model_name="importbatch",
            name="content_sha256",
            field=models.CharField(
                blank=True,
                db_default="",
                help_text="SHA-256 of the file's rows in a canonical form defined by the importer "
                "that sets it (the same data in another encoding, line ending or format has the "
                "same one); empty where the importer keeps none.",
                max_length=64,
            ),
        ),
    ]
